import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytesQuantity, formatBytes, parseQuantity } from './quantity.ts';

test('quantities as node status and pod specs write them', () => {
  assert.equal(parseQuantity('2'), 2);
  assert.equal(parseQuantity('1500m'), 1.5);
  assert.equal(parseQuantity('512Mi'), 512 * 2 ** 20);
  assert.equal(parseQuantity('24565748Ki'), 24565748 * 1024);
  assert.equal(parseQuantity('100G'), 100e9);
  assert.equal(parseQuantity('1e3'), 1000);
  assert.equal(parseQuantity('249Gi'), 249 * 2 ** 30);
  assert.equal(parseQuantity('0.5'), 0.5);
});

test('what is not a quantity is null', () => {
  for (const text of [undefined, '', 'Gi', '2 cores', '1.2.3', '5X']) assert.equal(parseQuantity(text), null, String(text));
});

test('bytes for messages and for pod specs', () => {
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1.5 * 2 ** 30), '1.5 GiB');
  assert.equal(formatBytes(249 * 2 ** 30), '249 GiB');
  assert.equal(bytesQuantity(2 ** 30), '1024Mi');
  assert.equal(bytesQuantity(2 ** 30 + 1), '1025Mi');
});
