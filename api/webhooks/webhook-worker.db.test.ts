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
import { createTestDatabaseUrl, testDatabaseKind } from '../../core/db/testing/test-database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import { createStorage } from '../../core/storage/create-storage.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { WebhooksRepo, type DeliveryRow } from '../../core/webhooks/webhooks-repo.ts';
import { httpReceiver, type ReceivedRequest } from '../../core/webhooks/testing/http-receiver.ts';
import { testCommandRow } from '../commands/testing/test-command-row.ts';
import { commandRecord } from '../commands/serialize.ts';
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

const verify = (secret: string, r: ReceivedRequest) => new Webhook(secret).verify(r.body, r.headers as Record<string, string>);

test('a test delivery is signed, sent once, and logged DELIVERED with its attempt', async (t) => {
  const r = await receiver(t, () => 200);
  const f = await fixture(t, [r.allow]);
  const { newSecret } = await f.repo.set(f.caller.account.id, 'main', r.url, false, new Date());
  await f.worker();
  const id = (await f.repo.addTestDelivery(f.caller.account.id, 'main'))!;
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
  const d = await f.settled((await f.repo.addTestDelivery(f.caller.account.id, 'main'))!);
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
  const d = await f.settled((await f.repo.addTestDelivery(f.caller.account.id, 'main'))!);
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
  const d = await f.settled((await f.repo.addTestDelivery(f.caller.account.id, 'main'))!);
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
  const id = (await f.repo.addTestDelivery(f.caller.account.id, 'main'))!;
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
  const id = (await f.repo.addTestDelivery(f.caller.account.id, 'main'))!;
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
  for (let i = 0; i < 40; i++) ids.push((await f.repo.addTestDelivery(f.caller.account.id, 'main'))!);
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
  const first = (await f.repo.addTestDelivery(f.caller.account.id, 'main'))!;
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
  const id = (await f.repo.addTestDelivery(f.caller.account.id, 'main'))!;
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
  const d = await f.settled((await f.repo.addTestDelivery(f.caller.account.id, 'main'))!);
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
  await ended();
  await new Promise((r) => setTimeout(r, 300)); // notifications arrive after commit
  assert.deepEqual(wakeUps, []);
  await f.repo.set(f.caller.account.id, 'main', 'https://hooks.example.com/x', false, new Date());
  await ended();
  for (let i = 0; i < 50 && wakeUps.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  await stop();
  assert.equal(wakeUps.length, 1);
});
