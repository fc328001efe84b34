import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allowedMethods, allowsMethod } from './allowed-methods.ts';

const ROUTES = [
  { method: 'ALL', path: '/v1/*' },
  { method: 'GET', path: '/v1/files/:file_id' },
  { method: 'DELETE', path: '/v1/files/:file_id' },
  { method: 'POST', path: '/v1/files/store-file' },
];

test('a literal route is its own resource; unknown paths have no Allow', () => {
  const allowOf = allowedMethods(() => ROUTES);
  assert.equal(allowOf('/v1/files/abc'), 'GET, DELETE, HEAD, OPTIONS');
  assert.equal(allowOf('/v1/files/store-file'), 'POST, OPTIONS');
  assert.equal(allowOf('/v1/nothing/here'), null);
});

test('answers are remembered per path, and stay right past the bound', () => {
  let reads = 0;
  const allowOf = allowedMethods(() => (reads++, ROUTES));
  for (let i = 0; i < 10_000; i++) {
    assert.equal(allowOf(`/v1/files/f${i % 5000}`), 'GET, DELETE, HEAD, OPTIONS');
    assert.equal(allowOf('/v1/files/store-file'), 'POST, OPTIONS');
  }
  assert.equal(reads, 1, 'the routes are read once');
});

test('a method is allowed only when the Allow header names it whole', () => {
  const allow = 'GET, DELETE, HEAD, OPTIONS';
  for (const method of ['GET', 'DELETE', 'HEAD', 'OPTIONS']) assert.equal(allowsMethod(allow, method), true, method);
  for (const method of ['GE', 'ET', 'DELET', 'ELETE', 'OPTION', 'PUT', 'get', '']) assert.equal(allowsMethod(allow, method), false, method);
  assert.equal(allowsMethod('POST, OPTIONS', 'POST'), true);
  assert.equal(allowsMethod('POST, OPTIONS', 'OST'), false);
});
