import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isUniqueViolation } from './unique-violation.ts';

test('a unique violation is found on the error or in its causes', () => {
  assert.equal(isUniqueViolation(Object.assign(new Error('dup'), { code: '23505' })), true);
  assert.equal(isUniqueViolation(new Error('wrapped', { cause: Object.assign(new Error('dup'), { code: '23505' }) })), true);
  assert.equal(isUniqueViolation(Object.assign(new Error('other'), { code: '23503' })), false);
  assert.equal(isUniqueViolation(new Error('plain')), false);
  assert.equal(isUniqueViolation(null), false);
});
