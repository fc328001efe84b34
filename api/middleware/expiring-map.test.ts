import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExpiringMap } from './expiring-map.ts';

test('an entry lives its time to live from when it was set', () => {
  const map = new ExpiringMap<string>(1_000, 10);
  map.set('a', 'one', 0);
  assert.equal(map.get('a', 999), 'one');
  assert.deepEqual(map.entry('a', 500), { key: 'a', value: 'one', expiresAt: 1_000 });
  assert.equal(map.get('a', 1_000), undefined);
  map.set('a', 'two', 900);
  assert.equal(map.get('a', 1_500), 'two', 'setting again starts its time again');
  map.delete('a');
  assert.equal(map.get('a', 1_500), undefined);
});

test('expired entries are dropped as new ones are set, oldest first', () => {
  const map = new ExpiringMap<number>(1_000, 100);
  for (let i = 0; i < 50; i++) map.set(`k${i}`, i, i * 10); // k0 expires at 1000, k49 at 1490
  assert.equal(map.size, 50);
  map.set('new', 0, 1_245);
  assert.equal(map.size, 51 - 25, 'k0..k24 are gone');
  assert.equal(map.get('k25', 1_245), 25);
  // A key set again is not dropped by its earlier, expired setting.
  map.set('k30', 300, 1_250);
  map.set('later', 0, 1_305);
  assert.equal(map.size, 22, 'k25..k29 are gone, k30 stays');
  assert.equal(map.get('k30', 1_305), 300);
});

test('when full, the oldest live entry goes, whatever was set again meanwhile', () => {
  const map = new ExpiringMap<number>(1_000_000, 3);
  map.set('a', 1, 0);
  map.set('b', 2, 1);
  map.set('a', 3, 2); // a is now newer than b
  map.set('c', 4, 3);
  map.set('d', 5, 4);
  assert.equal(map.size, 3);
  assert.equal(map.get('b', 5), undefined);
  assert.deepEqual(
    ['a', 'c', 'd'].map((k) => map.get(k, 5)),
    [3, 4, 5],
  );
});

test('stays bounded and correct over many more settings than it holds', () => {
  const map = new ExpiringMap<number>(100, 1_000);
  for (let i = 0; i < 50_000; i++) map.set(`k${i % 3_000}`, i, i);
  assert.equal(map.size, 100, 'only the last 100 ms are live');
  assert.equal(map.get('k1900', 49_999), 49_900);
  assert.equal(map.get('k1899', 49_999), undefined);
});
