// Taking turns within one claim: shares per account and webhook, and the slots kept for newcomers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { takeTurns, webhookKey, type Busy } from './webhooks-repo.ts';

const row = (id: string, account: string, environment = 'main') => ({ id, account_id: account, environment_name: environment });
const shares = (o: Partial<Busy> = {}): Busy => ({
  accounts: new Map(),
  webhooks: new Map(),
  perAccount: 4,
  perWebhook: 2,
  reserved: 0,
  ...o,
});

test('a claim takes candidates in order up to the limit, skipping those past their account or webhook share', () => {
  const candidates = [row('a1', 'A'), row('a2', 'A'), row('a3', 'A'), row('a4', 'A', 'test'), row('b1', 'B')];
  assert.deepEqual(takeTurns(candidates, 10, shares()), ['a1', 'a2', 'a4', 'b1']);
  assert.deepEqual(takeTurns(candidates, 2, shares()), ['a1', 'a2']);
  const busy = shares({ accounts: new Map([['A', 3]]), webhooks: new Map([[webhookKey('A', 'main'), 1]]) });
  assert.deepEqual(takeTurns(candidates, 10, busy), ['a1', 'b1']);
});

test('the reserved slots go only to accounts with nothing in flight', () => {
  const flood = [row('a1', 'A'), row('a2', 'A'), row('c1', 'C'), row('c2', 'C')];
  // 6 free, 4 reserved: A, already sending, takes the 2 unreserved; C's first is a newcomer's, its second is not.
  const busy = shares({ accounts: new Map([['A', 1]]), reserved: 4 });
  assert.deepEqual(takeTurns(flood, 6, busy), ['a1', 'a2', 'c1']);
  assert.deepEqual(takeTurns([...flood, row('n1', 'N')], 6, busy), ['a1', 'a2', 'c1', 'n1']);
  assert.deepEqual(takeTurns([row('a1', 'A'), row('n1', 'N'), row('m1', 'M')], 4, busy), ['n1', 'm1']);
});
