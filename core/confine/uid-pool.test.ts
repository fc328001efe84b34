import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UidPool } from './uid-pool.ts';

test('a uid is held by one run at a time, and not handed out again at once after release', () => {
  const pool = new UidPool(5000, 3);
  const a = pool.acquire();
  const b = pool.acquire();
  assert.notEqual(a, b);
  pool.release(a);
  assert.equal(pool.acquire(), 5002); // round robin: the next one, not the one just freed
  assert.equal(pool.acquire(), a);
  assert.throws(() => pool.acquire(), /all 3 sandbox uids are in use/);
  assert.ok(pool.contains(5001) && !pool.contains(5003) && !pool.contains(4999));
});

test('root and system uids cannot be configured', () => {
  assert.throws(() => new UidPool(0, 10), /invalid sandbox uid range/);
  assert.throws(() => new UidPool(999, 10), /invalid sandbox uid range/);
  assert.throws(() => new UidPool(2 ** 32 - 5, 10), /invalid sandbox uid range/);
});
