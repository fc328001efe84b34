// Idempotency claims on a real database: one claim per (API key, key) even at the same moment, the
// answer stored only by the claim's holder, takeover of a lapsed lease or an expired key, the sweep.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database } from '../db/database.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { IDEMPOTENCY_KEY_TTL_MS, IDEMPOTENCY_LEASE_MS, IdempotencyKeysRepo, type KeyOwner } from './idempotency-keys-repo.ts';

let database: Database;
let repo: IdempotencyKeysRepo;
before(async () => {
  database = await openTestDatabase();
  repo = new IdempotencyKeysRepo(database.db);
});
after(() => database.close());

let n = 0;
const owner = (apiKeyId = 'key-a'): KeyOwner => ({ apiKeyId, key: `k-${++n}` });
const T0 = new Date('2026-11-28T06:00:00.000Z');
const later = (ms: number) => new Date(T0.getTime() + ms);
const ANSWER = { status: 200, contentType: 'application/json', body: '{"command_id":"x"}' };

test('the first claim wins; the others see the row, unanswered, then answered', async () => {
  const o = owner();
  const first = await repo.claim(o, 'fp', T0);
  assert.equal(first.claimed, true);
  const second = await repo.claim(o, 'fp', later(1));
  assert.equal(second.claimed, false);
  assert.deepEqual(second.claimed ? null : second.row, { fingerprint: 'fp', leaseUntil: later(IDEMPOTENCY_LEASE_MS), answer: null });
  assert.equal(await repo.answer(o, first.claimed ? first.claim : '', ANSWER), true);
  const third = await repo.claim(o, 'fp', later(2));
  assert.deepEqual(third.claimed ? null : third.row?.answer, ANSWER);
});

test('twenty claims at the same moment: exactly one is granted', async () => {
  const o = owner();
  const outcomes = await Promise.all(Array.from({ length: 20 }, () => repo.claim(o, 'fp', T0)));
  assert.equal(outcomes.filter((x) => x.claimed).length, 1);
});

test('the same key of another API key is another claim', async () => {
  const o = owner('key-a');
  assert.equal((await repo.claim(o, 'fp', T0)).claimed, true);
  assert.equal((await repo.claim({ ...o, apiKeyId: 'key-b' }, 'other', T0)).claimed, true);
});

test('a lapsed lease is taken over by the same request only, and the old holder can no longer answer', async () => {
  const o = owner();
  const first = await repo.claim(o, 'fp', T0);
  assert.ok(first.claimed);
  assert.equal((await repo.claim(o, 'fp', later(IDEMPOTENCY_LEASE_MS - 1))).claimed, false, 'within the lease');
  assert.equal((await repo.claim(o, 'other', later(IDEMPOTENCY_LEASE_MS + 1))).claimed, false, 'another request');
  const second = await repo.claim(o, 'fp', later(IDEMPOTENCY_LEASE_MS + 1));
  assert.ok(second.claimed);
  assert.equal(await repo.answer(o, first.claim, ANSWER), false);
  await repo.release(o, first.claim); // not its claim any more: nothing happens
  assert.equal(await repo.answer(o, second.claim, ANSWER), true);
  // An answered key keeps its answer after the lease.
  const again = await repo.claim(o, 'fp', later(10 * IDEMPOTENCY_LEASE_MS));
  assert.deepEqual(again.claimed ? null : again.row?.answer, ANSWER);
});

test('a released claim frees the key', async () => {
  const o = owner();
  const first = await repo.claim(o, 'fp', T0);
  assert.ok(first.claimed);
  await repo.release(o, first.claim);
  assert.equal(await repo.find(o), null);
  assert.equal((await repo.claim(o, 'other', later(1))).claimed, true);
});

test('an expired key is claimed afresh, by any request; the sweep deletes expired keys only', async () => {
  const expired = owner();
  const fresh = owner();
  const a = await repo.claim(expired, 'fp', T0);
  assert.ok(a.claimed);
  await repo.answer(expired, a.claim, ANSWER);
  const b = await repo.claim(fresh, 'fp', later(IDEMPOTENCY_KEY_TTL_MS - 10_000));
  assert.ok(b.claimed);
  await repo.answer(fresh, b.claim, ANSWER);
  assert.equal((await repo.claim(expired, 'other', later(IDEMPOTENCY_KEY_TTL_MS - 1))).claimed, false, 'not yet expired');

  // Every key of the tests above is older than `at` too; the fresh one is not.
  const at = later(IDEMPOTENCY_KEY_TTL_MS + 1);
  let pruned = 0;
  for (let k = -1; k !== 0; pruned += k) k = await repo.pruneExpired(at, 2);
  assert.ok(pruned >= 1);
  assert.equal(await repo.find(expired), null);
  assert.notEqual(await repo.find(fresh), null);

  // Before a sweep, an expired key is taken over in the claim itself.
  const c = await repo.claim(fresh, 'another request', later(2 * IDEMPOTENCY_KEY_TTL_MS));
  assert.equal(c.claimed, true);
});
