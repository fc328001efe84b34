// The delivery queue's fair shares on a real database: claims take turns across accounts and
// webhooks and pass over busy ones, test deliveries are limited per account, finished deliveries are pruned.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import type { Database } from '../db/database.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { webhookKey, WebhooksRepo, type Busy } from './webhooks-repo.ts';

let database: Database;
let repo: WebhooksRepo;
let accounts: AccountsRepo;
before(async () => {
  database = await openTestDatabase();
  repo = new WebhooksRepo(database.db);
  accounts = new AccountsRepo(database.db);
});
after(() => database.close());

let n = 0;
/** A new account with a webhook in each of `environments`; its id. */
async function accountWithWebhooks(...environments: string[]): Promise<string> {
  const caller = await newCaller(accounts, `acct-${++n}`, 'pro');
  for (const env of environments) await repo.set(caller.account.id, env, 'https://hooks.example.com/x', false, new Date());
  return caller.account.id;
}

/** Queues `count` deliveries due `agoMs` in the past (older rows are due earlier). */
async function due(accountId: string, count: number, agoMs: number, environment = 'main'): Promise<void> {
  await database.db.execute(sql`
    insert into webhook_deliveries (id, account_id, environment_name, event_type, status, next_attempt_at)
    select gen_random_uuid(), ${accountId}, ${environment}, 'webhook.test', 'PENDING',
      now() - ${agoMs}::float8 * interval '1 millisecond' + i * interval '1 millisecond'
    from generate_series(1, ${count}) as i`);
}

/** Ends every pending delivery, so each test starts from an empty queue. */
async function drain(): Promise<void> {
  await database.db.execute(
    sql`update webhook_deliveries set status = 'FAILED', next_attempt_at = null, finished_at = now() where status = 'PENDING'`,
  );
}

const owners = (rows: { accountId: string }[]) => rows.map((r) => r.accountId);

test('claims take turns across accounts: a flood due earlier does not go first', async () => {
  await drain();
  const flood = await accountWithWebhooks('main');
  const b = await accountWithWebhooks('main');
  const c = await accountWithWebhooks('main');
  await due(flood, 300, 60_000); // due a minute ago
  await due(b, 1, 1_000);
  await due(c, 2, 500);
  const claimed = await repo.claimDue(3, 60_000);
  assert.deepEqual(new Set(owners(claimed)), new Set([flood, b, c]));
  // Next turn: c's second, then the flood again.
  assert.deepEqual(owners(await repo.claimDue(2, 60_000)), [flood, c]);
});

test('attempts in flight count as turns taken: a freed slot goes to the least served account, not the oldest row', async () => {
  await drain();
  const flood = await accountWithWebhooks('main', 'test');
  const victim = await accountWithWebhooks('main');
  await due(flood, 100, 60_000, 'main');
  await due(flood, 100, 60_000, 'test');
  await due(victim, 1, 100);
  const busy: Busy = {
    accounts: new Map([[flood, 3]]),
    webhooks: new Map([
      [webhookKey(flood, 'main'), 1],
      [webhookKey(flood, 'test'), 1],
    ]),
    perAccount: 4,
    perWebhook: 2,
    reserved: 0,
  };
  assert.deepEqual(owners(await repo.claimDue(1, 60_000, busy)), [victim]);
  assert.deepEqual(owners(await repo.claimDue(1, 60_000, busy)), [flood]);
});

test('within an account, claims take turns across its webhooks', async () => {
  await drain();
  const a = await accountWithWebhooks('main', 'test');
  await due(a, 50, 60_000, 'main');
  await due(a, 2, 1_000, 'test');
  const claimed = await repo.claimDue(4, 60_000);
  assert.deepEqual(
    claimed.map((d) => d.environmentName),
    ['main', 'test', 'main', 'test'],
  );
});

test('an account or webhook whose share is in flight is passed over, and its rows do not count as due', async () => {
  await drain();
  const busyAccount = await accountWithWebhooks('main');
  const other = await accountWithWebhooks('main', 'test');
  await due(busyAccount, 10, 60_000);
  await due(other, 10, 30_000, 'main');
  await due(other, 10, 1_000, 'test');
  const busy: Busy = {
    accounts: new Map([
      [busyAccount, 4],
      [other, 1],
    ]),
    webhooks: new Map([
      [webhookKey(busyAccount, 'main'), 2],
      [webhookKey(other, 'main'), 2],
    ]),
    perAccount: 4,
    perWebhook: 2,
    reserved: 0,
  };
  const claimed = await repo.claimDue(10, 60_000, busy);
  // Only `other`'s test webhook may send, two at once; its account has 3 slots left.
  assert.deepEqual(
    claimed.map((d) => [d.accountId, d.environmentName]),
    [
      [other, 'test'],
      [other, 'test'],
    ],
  );
  // The busy rows wait for a slot, not for a time: the next due is the rest of the test webhook's.
  assert.ok((await repo.msUntilNextDue({ ...busy, webhooks: new Map([...busy.webhooks, [webhookKey(other, 'test'), 2]]) })) === null);
  assert.ok((await repo.msUntilNextDue(busy))! <= 0);
});

test('test deliveries: at most 10 a minute per account, all environments together; then a refusal with a wait', async () => {
  const a = await accountWithWebhooks('main', 'test');
  const b = await accountWithWebhooks('main');
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => repo.addTestDelivery(a, i % 2 ? 'main' : 'test')));
  const queued = results.filter((r) => r && 'id' in r);
  assert.equal(queued.length, 10, JSON.stringify(results));
  for (const r of results.filter((x) => x && !('id' in x))) {
    assert.ok(r && 'retryAfterSeconds' in r);
    assert.ok(r.retryAfterSeconds >= 1 && r.retryAfterSeconds <= 60, String(r.retryAfterSeconds));
    assert.equal(r.reason, 'at most 10 test deliveries a minute per account');
  }
  // Another account's share is its own.
  const other = await repo.addTestDelivery(b, 'main');
  assert.ok(other && 'id' in other);
  // An environment without a webhook: null, as before.
  assert.equal(await repo.addTestDelivery(a, 'staging'), null);
});

test('test deliveries: at most 20 PENDING per account, whatever their age', async () => {
  const a = await accountWithWebhooks('main');
  const limits = { perMinute: Infinity, pending: 20 };
  for (let i = 0; i < 20; i++) assert.ok('id' in ((await repo.addTestDelivery(a, 'main', limits)) ?? {}));
  // Out of the per-minute window, still PENDING (a receiver that never answers): they still count.
  await database.db.execute(sql`update webhook_deliveries set created_at = now() - interval '1 hour' where account_id = ${a}`);
  const refused = await repo.addTestDelivery(a, 'main', limits);
  assert.deepEqual(refused, {
    retryAfterSeconds: 60,
    reason: '20 test deliveries of this account are still PENDING (at most 20); see GET /v1/webhook/deliveries',
  });
  await database.db.execute(sql`update webhook_deliveries set status = 'DELIVERED', finished_at = now() where account_id = ${a}`);
  assert.ok('id' in ((await repo.addTestDelivery(a, 'main', limits)) ?? {}));
});

test('pruning deletes deliveries that ended before the retention, a batch at a time; pending and recent ones stay', async () => {
  await drain();
  await database.db.execute(sql`delete from webhook_deliveries`);
  const a = await accountWithWebhooks('main');
  await due(a, 5, 0);
  await database.db.execute(
    sql`update webhook_deliveries set status = 'DELIVERED', finished_at = now() - interval '31 days' where account_id = ${a}`,
  );
  await due(a, 1, 0); // recent, delivered yesterday
  await database.db.execute(
    sql`update webhook_deliveries set status = 'FAILED', finished_at = now() - interval '1 day' where account_id = ${a} and finished_at is null`,
  );
  await due(a, 1, 40 * 86_400_000); // pending, created long ago
  const retentionMs = 30 * 86_400_000;
  assert.equal(await repo.pruneFinished(retentionMs, 2), 2);
  assert.equal(await repo.pruneFinished(retentionMs, 2), 2);
  assert.equal(await repo.pruneFinished(retentionMs, 2), 1);
  assert.equal(await repo.pruneFinished(retentionMs, 2), 0);
  const left = await repo.listDeliveries(a, 'main', 100, 0);
  assert.deepEqual(left.map((d) => d.status).sort(), ['FAILED', 'PENDING']);
});
