import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyCache, sharedKeyCache } from './key-cache.ts';

test('an authenticated key is remembered for the time to live, then looked up again', () => {
  let now = 0;
  const cache = new KeyCache<string>(5_000, () => now);
  cache.set('ffo_a_secret', 'caller-a', 'a', 'acct-1');
  assert.equal(cache.get('ffo_a_secret'), 'caller-a');
  assert.equal(cache.get('ffo_a_other'), undefined, 'another secret for the same key id is not a hit');
  now = 4_999;
  assert.equal(cache.get('ffo_a_secret'), 'caller-a');
  now = 5_000;
  assert.equal(cache.get('ffo_a_secret'), undefined);
});

test('revoking a key or changing its account forgets it at once', () => {
  const cache = new KeyCache<string>(60_000, () => 0);
  cache.set('ffo_a_1', 'a', 'a', 'acct-1');
  cache.set('ffo_b_1', 'b', 'b', 'acct-1');
  cache.set('ffo_c_1', 'c', 'c', 'acct-2');
  cache.forgetKey('a');
  assert.equal(cache.get('ffo_a_1'), undefined);
  assert.equal(cache.get('ffo_b_1'), 'b');
  cache.forgetAccount('acct-1');
  assert.equal(cache.get('ffo_b_1'), undefined);
  assert.equal(cache.get('ffo_c_1'), 'c');
});

test('a plan edit forgets every cached caller; the cache is shared per owner (database)', () => {
  const owner = {};
  const cache = sharedKeyCache<string>(owner);
  assert.equal(sharedKeyCache<string>(owner), cache);
  assert.notEqual(sharedKeyCache<string>({}), cache);
  cache.set('ffo_a_1', 'a', 'a', 'acct-1');
  cache.set('ffo_b_1', 'b', 'b', 'acct-2');
  cache.forgetAll();
  assert.equal(cache.get('ffo_a_1'), undefined);
  assert.equal(cache.get('ffo_b_1'), undefined);
});
