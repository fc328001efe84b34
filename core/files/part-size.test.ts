import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choosePartSize, MAX_PART_BYTES, MIN_PART_BYTES, partCount } from './part-size.ts';

const MiB = 1024 * 1024;

test('part size: raised to 5 MiB, clamped at 5 GiB, grown to fit 10,000 parts', () => {
  assert.equal(choosePartSize(12 * MiB, 1), MIN_PART_BYTES);
  assert.equal(choosePartSize(12 * MiB, 5 * MiB), 5 * MiB);
  assert.equal(choosePartSize(12 * MiB, 6 * 1024 * MiB), MAX_PART_BYTES);
  assert.equal(choosePartSize(100_000 * MiB, 5 * MiB), 10 * MiB);
  assert.equal(choosePartSize(5_497_558_138_880, 5 * MiB), Math.ceil(5_497_558_138_880 / 10_000));
  assert.equal(choosePartSize(1000), 16 * MiB);
});

test('part count: the last part is the remainder; an empty file has one part', () => {
  assert.equal(partCount(12 * MiB, 5 * MiB), 3);
  assert.equal(partCount(10 * MiB, 5 * MiB), 2);
  assert.equal(partCount(0, 5 * MiB), 1);
  assert.ok(partCount(5_497_558_138_880, choosePartSize(5_497_558_138_880, 1)) <= 10_000);
});
