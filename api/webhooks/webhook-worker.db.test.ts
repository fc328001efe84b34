// The webhook worker on a real database (PGlite, or PostgreSQL with FFOP_TEST_DATABASE_URL) against a
// real HTTP receiver on 127.0.0.1, with a fast retry schedule.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { AccountsRepo, type Caller } from '../../core/accounts/accounts-repo.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { openDatabase, type Database } from '../../core/db/database.ts';
import { rowsOf } from '../../core/db/migrate.ts';
import { createTestDatabaseUrl, testDatabaseKind } from '../../core/db/testing/test-database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import { createStorage } from '../../core/storage/create-storage.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { WebhooksRepo, type DeliveryRow } from '../../core/webhooks/webhooks-repo.ts';
import { httpReceiver, type ReceivedRequest } from '../../core/webhooks/testing/http-receiver.ts';
import { testCommandRow } from '../commands/testing/test-command-row.ts';
import { commandRecord } from '../commands/serialize.ts';
import { IDEMPOTENCY_KEY_TTL_MS, IdempotencyKeysRepo } from '../../core/idempotency/idempotency-keys-repo.ts';
import { WebhookWorker, type AttemptOutcome, type WebhookWorkerOptions } from './webhook-worker.ts';

/** A receiver at /hooks that answers each request with the status `answer` gives (null: never answers). */
async function receiver(t: TestContext, answer: (n: number) => number | null) {
  const r = await httpReceiver(t, (_req, res, n) => {
    const status = answer(n);
    if (status !== null) res.writeHead(status).end();
  });
  return { ...r, url: `${r.url}/hooks`, received: r.requests };
}

interface Fixture {
  database: Database;
  databaseUrl: string;
  repo: WebhooksRepo;
  commands: CommandsRepo;
  files: FilesRepo;
  storage: Storage;
  caller: Caller;
  outcomes: AttemptOutcome[];
  /** Queues a test delivery to the account's webhook (acme's by default), past the per-account limits. */
  queueTest(accountId?: string, environment?: string): Promise<string>;
  /** A worker on this database (or `database`), stopped when the test ends. */
  worker(o?: Partial<WebhookWorkerOptions>): Promise<WebhookWorker>;
  /** Waits until the delivery is no longer PENDING (or `until` holds), failing after 20 s. */
  settled(id: string, until?: (d: DeliveryRow) => boolean): Promise<DeliveryRow>;
  /**
   * The outcomes once the worker has reported `count` attempts. It reports each right after the write
   * that records it commits, so a reader of the database can see the attempt a moment before the report.
   */
  reported(count: number): Promise<AttemptOutcome[]>;
}

async function fixture(t: TestContext, allow: string[]): Promise<Fixture> {
  const { url, drop } = await createTestDatabaseUrl();
  const database = await openDatabase(url);
  const dir = await mkdtemp(join(tmpdir(), 'ffop-webhooks-'));
  const workers: WebhookWorker[] = [];
  t.after(async () => {
    for (const w of workers) await w.stop();
    await database.close();
    await drop();
    await rm(dir, { recursive: true, force: true });
  });
  const repo = new WebhooksRepo(database.db);
  const commands = new CommandsRepo(database.db);
  const files = new FilesRepo(database.db);
  const storage = await createStorage({
    kind: 'local',
    publicUrl: 'http://127.0.0.1:1',
    signingKey: 'webhook-test-signing-key',
    localDir: dir,
  });
  const caller = await newCaller(new AccountsRepo(database.db), 'acme', 'pro');
  const outcomes: AttemptOutcome[] = [];
  return {
    database,
    databaseUrl: url,
    repo,
    commands,
    files,
    storage,
    caller,
    outcomes,
    async queueTest(accountId = caller.account.id, environment = 'main') {
      const queued = await repo.addTestDelivery(accountId, environment, UNLIMITED);
      assert.ok(queued && 'id' in queued, `no test delivery queued: ${JSON.stringify(queued)}`);
      return queued.id;
    },
    async worker(o = {}) {
      const worker = new WebhookWorker({
        database,
        commands,
        files,
        storage,
        logger: pino({ level: 'silent' }),
        allowAddresses: allow,
        retryDelaysMs: [50, 50],
        timeoutMs: 5_000,
        claimMarginMs: 1_000,
        pollMs: 200,
        onAttempt: (outcome) => outcomes.push(outcome),
        ...o,
      });
      workers.push(worker);
      await worker.start();
      return worker;
    },
    async settled(id, until = (d) => d.status !== 'PENDING') {
      for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 20))) {
        const d = await repo.findDelivery(id);
        if (d && until(d)) return d;
        if (Date.now() > deadline) assert.fail(`delivery ${id} is still ${JSON.stringify(d)}`);
      }
    },
    async reported(count) {
      for (const deadline = Date.now() + 5_000; outcomes.length < count; await new Promise((r) => setTimeout(r, 10))) {
        if (Date.now() > deadline) assert.fail(`the worker reported ${JSON.stringify(outcomes)}, not ${count} attempts`);
      }
      return outcomes;
    },
  };
}

const UNLIMITED = { perMinute: Infinity, pending: Infinity };

const verify = (secret: string, r: ReceivedRequest) => new Webhook(secret).verify(r.body, r.headers as Record<string, string>);

test('a test delivery is signed, sent once, and logged DELIVERED with its attempt', async (t) => {
  const r = await receiver(t, () => 200);
  const f = await fixture(t, [r.allow]);
  const { newSecret } = await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  await f.worker();
  const id = await f.queueTest();
  const d = await f.settled(id);
  assert.equal(d.status, 'DELIVERED');
  assert.equal(r.received.length, 1);
  const payload = verify(newSecret!, r.received[0]) as { data: unknown; timestamp: number };
  assert.deepEqual(payload.data, { message: 'test delivery from ffmpeg-operator', environment_name: 'main' });
  assert.equal(typeof payload.timestamp, 'number');
  assert.equal(r.received[0].headers['webhook-id'], `msg_${id}`);
  assert.equal(r.received[0].body, d.payload);
  assert.equal(d.attempts.length, 1);
  assert.equal(d.attempts[0].statusCode, 200);
  assert.equal(d.attempts[0].error, null);
  assert.equal(d.nextAttemptAt, null);
  assert.ok(d.finishedAt);
  assert.deepEqual(await f.reported(1), ['delivered']);
});

test('a command that ends is announced with exactly its poll record, only to its own environment', async (t) => {
  const r = await receiver(t, () => 200);
  const f = await fixture(t, [r.allow]);
  const { newSecret } = await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  // Another environment of the same account has a webhook too: it must not hear of this command.
  const other = await receiver(t, () => 200);
  await f.repo.set(f.caller.account.id, 'test', other.url, false, new Date());
  await f.worker();
  const row = testCommandRow(f.caller);
  await f.commands.insert(row);
  await f.commands.update(row.id, { status: 'PROCESSING' });
  assert.equal((await f.repo.listDeliveries(f.caller.account.id, 'main', 10, 0)).length, 0, 'PROCESSING is not announced');
  await f.commands.update(row.id, { status: 'FAILED', errorStatus: 'FFMPEG_FAILED', errorMessage: 'boom', finishedAt: new Date() });
  const [delivery] = await f.repo.listDeliveries(f.caller.account.id, 'main', 10, 0);
  assert.equal(delivery.eventType, 'command.finished');
  assert.equal(delivery.subjectId, row.id);
  await f.settled(delivery.id);
  const payload = verify(newSecret!, r.received[0]) as { data: unknown };
  const found = (await f.commands.findWithOutputs(row.id))!;
  assert.deepEqual(payload.data, await commandRecord(found.row, found.files, f.storage, new Date()));
  assert.equal(other.received.length, 0);
  assert.deepEqual(await f.repo.listDeliveries(f.caller.account.id, 'test', 10, 0), []);
});

test('a 500 is retried after the schedule with the same id and bytes, then delivered', async (t) => {
  const r = await receiver(t, (n) => (n === 1 ? 500 : 200));
  const f = await fixture(t, [r.allow]);
  const { newSecret } = await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  await f.worker();
  const d = await f.settled(await f.queueTest());
  assert.equal(d.status, 'DELIVERED');
  assert.deepEqual(
    d.attempts.map((a) => [a.statusCode, a.error === null ? null : /HTTP 500/.test(a.error)]),
    [
      [500, true],
      [200, null],
    ],
  );
  assert.equal(r.received.length, 2);
  assert.equal(r.received[0].headers['webhook-id'], r.received[1].headers['webhook-id']);
  assert.equal(r.received[0].body, r.received[1].body);
  for (const got of r.received) verify(newSecret!, got);
  assert.deepEqual(await f.reported(2), ['failed_attempt', 'delivered']);
});

test('an attempt that times out is retried', async (t) => {
  const r = await receiver(t, (n) => (n === 1 ? null : 204));
  const f = await fixture(t, [r.allow]);
  await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  await f.worker({ timeoutMs: 300 });
  const d = await f.settled(await f.queueTest());
  assert.equal(d.status, 'DELIVERED');
  assert.equal(d.attempts.length, 2);
  assert.equal(d.attempts[0].statusCode, null);
  assert.match(d.attempts[0].error ?? '', /timed out after 300 ms/);
  assert.equal(d.attempts[1].statusCode, 204);
});

test('past the end of the schedule the delivery gives up: FAILED, every attempt logged', async (t) => {
  const r = await receiver(t, () => 503);
  const f = await fixture(t, [r.allow]);
  await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  await f.worker({ retryDelaysMs: [20, 40] });
  const d = await f.settled(await f.queueTest());
  assert.equal(d.status, 'FAILED');
  assert.deepEqual(
    d.attempts.map((a) => a.statusCode),
    [503, 503, 503],
  );
  assert.equal(d.nextAttemptAt, null);
  assert.ok(d.finishedAt);
  assert.equal(r.received.length, 3);
  assert.deepEqual(await f.reported(3), ['failed_attempt', 'failed_attempt', 'gave_up']);
});

test('restart: a worker stopped mid-send gives the delivery back and a new worker delivers it', async (t) => {
  const r = await receiver(t, (n) => (n === 1 ? null : 200));
  const f = await fixture(t, [r.allow]);
  await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  const first = await f.worker();
  const id = await f.queueTest();
  while (r.received.length === 0) await new Promise((res) => setTimeout(res, 10));
  await first.stop();
  assert.equal((await f.repo.findDelivery(id))?.status, 'PENDING');
  await f.worker();
  const d = await f.settled(id);
  assert.equal(d.status, 'DELIVERED');
  assert.equal(d.attempts.length, 1, 'the cut attempt is not counted');
  assert.equal(r.received.length, 2);
  assert.equal(r.received[0].body, r.received[1].body);
});

test('restart: a delivery claimed by a process that died is sent once its claim ends', async (t) => {
  const r = await receiver(t, () => 200);
  const f = await fixture(t, [r.allow]);
  await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  const id = await f.queueTest();
  // The dead process: it claimed the delivery (for 300 ms) and never came back.
  const [claimed] = await f.repo.claimDue(10, 300);
  assert.equal(claimed.id, id);
  await f.worker();
  const d = await f.settled(id);
  assert.equal(d.status, 'DELIVERED');
  assert.equal(r.received.length, 1);
});

test('two workers never send the same attempt twice (SKIP LOCKED claims)', async (t) => {
  const r = await receiver(t, () => 200);
  const f = await fixture(t, [r.allow]);
  await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push(await f.queueTest());
  // On PostgreSQL the second worker has connections of its own, as another API replica would.
  let second = f.database;
  if (testDatabaseKind() === 'postgres') {
    second = await openDatabase(f.databaseUrl);
    t.after(() => second.close());
  }
  await Promise.all([f.worker({ maxParallel: 3 }), f.worker({ database: second, maxParallel: 3 })]);
  for (const id of ids) assert.equal((await f.settled(id)).status, 'DELIVERED');
  const sent = r.received.map((x) => x.headers['webhook-id']);
  assert.equal(sent.length, 40, `sent ${sent.length} times`);
  assert.equal(new Set(sent).size, 40);
  for (const id of ids) assert.equal((await f.repo.findDelivery(id))!.attempts.length, 1);
});

test('deleting the webhook ends its pending deliveries FAILED with "webhook removed"', async (t) => {
  const failing = await receiver(t, () => 500);
  const good = await receiver(t, () => 200);
  const f = await fixture(t, [failing.allow, good.allow]);
  await f.repo.set(f.caller.account.id, 'main', failing.url, false, new Date());
  await f.worker({ retryDelaysMs: [60_000] });
  const first = await f.queueTest();
  await f.settled(first, (d) => d.attempts.length === 1);
  assert.equal(await f.repo.delete(f.caller.account.id, 'main', new Date()), true);
  const removed = await f.repo.findDelivery(first);
  assert.equal(removed?.status, 'FAILED');
  assert.deepEqual(
    removed?.attempts.map((a) => (a.error?.startsWith('POST') ? 'HTTP 500' : a.error)),
    ['HTTP 500', 'webhook removed'],
  );
  assert.equal(await f.repo.delete(f.caller.account.id, 'main', new Date()), false);
  assert.equal(await f.repo.addTestDelivery(f.caller.account.id, 'main'), null);

  // A delivery whose webhook is gone by the time it is sent (a trigger raced the deletion) ends the same way.
  const orphan = randomUUID();
  await f.database.db.execute(sql`insert into webhook_deliveries (id, account_id, environment_name, event_type, status, next_attempt_at)
    values (${orphan}, ${f.caller.account.id}, 'main', 'webhook.test', 'PENDING', now())`);
  await f.database.db.execute(sql`notify ffop_webhook_delivery`);
  const gone = await f.settled(orphan);
  assert.equal(gone.status, 'FAILED');
  assert.equal(gone.attempts[0].error, 'webhook removed');
});

test('a retry goes to the URL set since the last attempt', async (t) => {
  const failing = await receiver(t, () => 500);
  const good = await receiver(t, () => 200);
  const f = await fixture(t, [failing.allow, good.allow]);
  await f.repo.set(f.caller.account.id, 'main', failing.url, false, new Date());
  await f.worker({ retryDelaysMs: Array<number>(50).fill(50) });
  const id = await f.queueTest();
  await f.settled(id, (d) => d.attempts.length >= 1);
  await f.repo.set(f.caller.account.id, 'main', good.url, false, new Date());
  const d = await f.settled(id);
  assert.equal(d.status, 'DELIVERED');
  assert.equal(good.received.length, 1);
  assert.equal(d.attempts.at(-1)?.statusCode, 200);
});

test('the secret: new when first set or rotated, kept when only the URL changes', async (t) => {
  const f = await fixture(t, []);
  const first = await f.repo.set(f.caller.account.id, 'main', 'https://example.com/a', false, new Date());
  assert.match(first.newSecret ?? '', /^whsec_/);
  const moved = await f.repo.set(f.caller.account.id, 'main', 'https://example.com/b', false, new Date());
  assert.equal(moved.newSecret, null);
  assert.equal(moved.row.secret, first.newSecret);
  assert.equal(moved.row.url, 'https://example.com/b');
  const rotated = await f.repo.set(f.caller.account.id, 'main', 'https://example.com/b', true, new Date());
  assert.ok(rotated.newSecret && rotated.newSecret !== first.newSecret);
  assert.equal(rotated.row.secret, rotated.newSecret);
  const otherEnv = await f.repo.set(f.caller.account.id, 'test', 'https://example.com/t', false, new Date());
  assert.ok(otherEnv.newSecret && otherEnv.newSecret !== rotated.newSecret);
});

test('attack: a URL whose name resolves to loopback is not contacted; the attempt records the refusal', async (t) => {
  const r = await receiver(t, () => 200);
  const f = await fixture(t, []); // nothing allowed
  await f.repo.set(f.caller.account.id, 'main', `http://localhost:${r.port}/hooks`, false, new Date());
  await f.worker({ retryDelaysMs: [] });
  const d = await f.settled(await f.queueTest());
  assert.equal(d.status, 'FAILED');
  assert.equal(d.attempts[0].statusCode, null);
  assert.match(d.attempts[0].error ?? '', /refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address/);
  assert.equal(r.connections(), 0);
});

test('a command ending on an account without a webhook wakes no sender; one with a webhook wakes it once', async (t) => {
  const f = await fixture(t, []);
  const wakeUps: string[] = [];
  const stop = await f.database.listen(
    'ffop_webhook_delivery',
    (payload) => wakeUps.push(payload),
    () => {},
  );
  const ended = async () => {
    const row = testCommandRow(f.caller);
    await f.commands.insert(row);
    await f.commands.update(row.id, { status: 'SUCCESS', finishedAt: new Date() });
  };
  // Notifications arrive in commit order: once a marker sent after a change has arrived, any wake-up
  // that change caused has arrived too (however slow the machine).
  const marked = async (marker: string) => {
    await f.database.db.execute(sql`select pg_notify('ffop_webhook_delivery', ${marker})`);
    for (const deadline = Date.now() + 10_000; !wakeUps.includes(marker); await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > deadline) assert.fail(`the marker ${marker} never arrived`);
    }
    return wakeUps.filter((w) => !w.startsWith('marker-'));
  };
  await ended();
  assert.deepEqual(await marked('marker-1'), []);
  await f.repo.set(f.caller.account.id, 'main', 'https://hooks.example.com/x', false, new Date());
  await ended();
  const woken = await marked('marker-2');
  await stop();
  assert.equal(woken.length, 1);
});

/** Queues `count` deliveries to the account's main webhook at once, as a burst of ended commands would. */
async function burst(f: Fixture, accountId: string, count: number): Promise<void> {
  await f.database.db.execute(sql`
    insert into webhook_deliveries (id, account_id, environment_name, event_type, status, next_attempt_at)
    select gen_random_uuid(), ${accountId}, 'main', 'webhook.test', 'PENDING', now() from generate_series(1, ${count})`);
  await f.database.db.execute(sql`notify ffop_webhook_delivery`);
}

/** The account's deliveries never attempted (no attempt recorded). */
async function untried(f: Fixture, accountId: string): Promise<number> {
  const result = await f.database.db.execute(
    sql`select count(*)::int as n from webhook_deliveries where account_id = ${accountId} and jsonb_array_length(attempts) = 0`,
  );
  return rowsOf<{ n: number }>(result)[0].n;
}

async function until(what: string, holds: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + 20_000; !(await holds()); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > deadline) assert.fail(`still waiting for ${what}`);
  }
}

test('fair shares: hundreds of deliveries to a receiver that never answers hold only their webhook share; another account is served at once', async (t) => {
  const blackHole = await receiver(t, () => null); // accepts, reads the request, never answers
  const healthy = await receiver(t, () => 200);
  const f = await fixture(t, [blackHole.allow, healthy.allow]);
  const victim = await newCaller(new AccountsRepo(f.database.db), 'victim', 'pro');
  await f.repo.set(f.caller.account.id, 'main', blackHole.url, false, new Date());
  await f.repo.set(victim.account.id, 'main', healthy.url, false, new Date());
  // The service's shares (16 in flight, 4 per account, 2 per webhook); a deadline longer than this test.
  await f.worker({ timeoutMs: 120_000, maxParallel: undefined, perAccount: undefined, perWebhook: undefined });
  await burst(f, f.caller.account.id, 300);
  await until('the flood to hold its share', () => blackHole.requests.length >= 2);
  const id = await f.queueTest(victim.account.id);
  const d = await f.settled(id);
  assert.equal(d.status, 'DELIVERED');
  // Claimed while the flood had barely started: its webhook holds 2 attempts, the rest wait their turn.
  assert.equal(blackHole.connections(), 2, 'the flooding webhook holds its share of attempts, no more');
  assert.equal(await untried(f, f.caller.account.id), 300);
  assert.equal(healthy.received.length, 1);
});

test('fair shares: with every slot held by flooding accounts, the next free slot goes to the account waiting, before older flood rows', async (t) => {
  // Each flood attempt fails after 300 ms; its retry and the rest of the flood are due long before the victim's delivery.
  const slow = await receiver(t, () => null);
  const healthy = await receiver(t, () => 200);
  const f = await fixture(t, [slow.allow, healthy.allow]);
  const accounts = new AccountsRepo(f.database.db);
  const second = await newCaller(accounts, 'second-flooder', 'pro');
  const victim = await newCaller(accounts, 'victim', 'pro');
  for (const c of [f.caller, second]) await f.repo.set(c.account.id, 'main', slow.url, false, new Date());
  await f.repo.set(victim.account.id, 'main', healthy.url, false, new Date());
  await f.worker({ timeoutMs: 300, maxParallel: 4, perAccount: 2, perWebhook: 2, reserved: 0, retryDelaysMs: Array<number>(20).fill(10) });
  await burst(f, f.caller.account.id, 200);
  await burst(f, second.account.id, 200);
  await until('the flooders to hold every slot', () => slow.requests.length >= 4);
  const id = await f.queueTest(victim.account.id);
  const d = await f.settled(id);
  assert.equal(d.status, 'DELIVERED');
  // In global due order the victim's delivery would start after all 400 (and their retries); fairly, it
  // takes the first slot freed after the first wave, or one freed at the same moment.
  const started = Date.parse(d.attempts[0].at);
  const result = await f.database.db.execute(
    sql`select attempts from webhook_deliveries where account_id in (${f.caller.account.id}, ${second.account.id})`,
  );
  const before = rowsOf<{ attempts: { at: string }[] }>(result)
    .flatMap((r) => r.attempts)
    .filter((a) => Date.parse(a.at) < started).length;
  assert.ok(before <= 16, `${before} flood attempts started before the victim's`);
});

test('the worker deletes deliveries past their retention, and only those', async (t) => {
  const r = await receiver(t, () => 200);
  const f = await fixture(t, [r.allow]);
  await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  const old = await f.queueTest();
  const recent = await f.queueTest();
  await f.database.db.execute(
    sql`update webhook_deliveries set status = 'DELIVERED', finished_at = now() - interval '2 hours' where id = ${old}`,
  );
  await f.database.db.execute(sql`update webhook_deliveries set status = 'DELIVERED', finished_at = now() where id = ${recent}`);
  await f.worker({ retentionMs: 3_600_000 });
  await until('the old delivery to be pruned', async () => (await f.repo.findDelivery(old)) === null);
  assert.equal((await f.repo.findDelivery(recent))?.status, 'DELIVERED');
});

test("the worker's prune also deletes other tables' expired rows: idempotency keys past 24 hours, and only those", async (t) => {
  const f = await fixture(t, []);
  const keys = new IdempotencyKeysRepo(f.database.db);
  const aDayAgo = new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS - 60_000);
  const old = { apiKeyId: 'k', key: 'old' };
  const fresh = { apiKeyId: 'k', key: 'fresh' };
  assert.ok((await keys.claim(old, 'fp', aDayAgo)).claimed);
  assert.ok((await keys.claim(fresh, 'fp', new Date())).claimed);
  await f.worker({ alsoPrune: [{ what: 'expired idempotency keys', prune: (batch) => keys.pruneExpired(new Date(), batch) }] });
  await until('the expired key to be pruned', async () => (await keys.find(old)) === null);
  assert.notEqual(await keys.find(fresh), null);
});

test('fair shares: several accounts flooding at once leave the reserved slots to an account with nothing in flight', async (t) => {
  const blackHole = await receiver(t, () => null);
  const healthy = await receiver(t, () => 200);
  const f = await fixture(t, [blackHole.allow, healthy.allow]);
  const accounts = new AccountsRepo(f.database.db);
  const flooders = [f.caller, ...(await Promise.all([1, 2, 3].map((i) => newCaller(accounts, `flooder-${i}`, 'pro'))))];
  const victim = await newCaller(accounts, 'victim', 'pro');
  for (const c of flooders) {
    await f.repo.set(c.account.id, 'main', blackHole.url, false, new Date());
    await burst(f, c.account.id, 50);
  }
  await f.repo.set(victim.account.id, 'main', healthy.url, false, new Date());
  // 8 slots, 2 per webhook, 2 kept for newcomers: without the reserve the four flooders would hold all 8.
  await f.worker({ timeoutMs: 120_000, maxParallel: 8, perAccount: 4, perWebhook: 2 });
  await until('the flooders to hold their slots', () => blackHole.requests.length >= 6);
  const d = await f.settled(await f.queueTest(victim.account.id));
  assert.equal(d.status, 'DELIVERED');
  assert.equal(blackHole.connections(), 6);
});
