// The Idempotency-Key middleware on a real database, in front of routes that fail, throw, block or
// count their calls: what is stored, what waits, what a dead claim's repeat does.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Hono } from 'hono';
import pino from 'pino';
import type { Caller } from '../../core/accounts/accounts-repo.ts';
import type { Database } from '../../core/db/database.ts';
import { openTestDatabase } from '../../core/db/testing/test-database.ts';
import { requestFingerprint } from '../../core/idempotency/idempotency-key.ts';
import { IdempotencyKeysRepo, type KeyOwner } from '../../core/idempotency/idempotency-keys-repo.ts';
import { RequestInvalid } from '../schemas/validation.ts';
import type { AppEnv } from './auth.ts';
import { idempotency } from './idempotency.ts';

let database: Database;
before(async () => {
  database = await openTestDatabase();
});
after(() => database.close());

const BODY = '{"x":1}';
let n = 0;
const newKey = () => `key-${++n}`;

/** A real repo that tells when a waiting repeat reads the row. */
class ObservedKeys extends IdempotencyKeysRepo {
  onFind: (() => void) | null = null;
  override async find(owner: KeyOwner) {
    const row = await super.find(owner);
    this.onFind?.();
    return row;
  }
}

function appWith(keys: IdempotencyKeysRepo, route: (calls: number) => Promise<Response> | Response, waitMs?: number) {
  let calls = 0;
  const app = new Hono<AppEnv>();
  app.onError((err, c) =>
    err instanceof RequestInvalid ? c.json({ detail: err.detail }, 422) : c.json({ detail: 'Internal Server Error' }, 500),
  );
  app.use('*', async (c, next) => {
    c.set('caller', { keyId: c.req.header('x-api-key') ?? 'k', environment: 'main', account: {} } as Caller);
    await next();
  });
  app.use('/v1/create', idempotency({ keys, clock: () => new Date(), logger: pino({ level: 'silent' }), waitMs }));
  app.post('/v1/create', () => route(++calls));
  const send = (key: string, body = BODY) =>
    app.request('/v1/create', { method: 'POST', body, headers: { 'content-type': 'application/json', 'idempotency-key': key } });
  return { send, calls: () => calls };
}

const ok = (calls: number) => Response.json({ created: calls });

test('a 5xx or a thrown error is not stored: the repeat runs the route again, and its 200 is kept', async () => {
  const keys = new IdempotencyKeysRepo(database.db);
  for (const failure of [() => Response.json({ detail: 'down' }, { status: 503 }), () => Promise.reject(new Error('boom'))]) {
    const { send, calls } = appWith(keys, (k) => (k === 1 ? failure() : ok(k)));
    const key = newKey();
    assert.ok((await send(key)).status >= 500);
    const second = await send(key);
    assert.deepEqual([second.status, await second.json()], [200, { created: 2 }]);
    const third = await send(key);
    assert.deepEqual([third.status, await third.json(), third.headers.get('idempotent-replayed')], [200, { created: 2 }, 'true']);
    assert.equal(calls(), 2);
  }
});

test('a 429 is not stored', async () => {
  const { send, calls } = appWith(new IdempotencyKeysRepo(database.db), (k) => (k === 1 ? Response.json({}, { status: 429 }) : ok(k)));
  const key = newKey();
  assert.equal((await send(key)).status, 429);
  assert.equal((await send(key)).status, 200);
  assert.equal(calls(), 2);
});

test('a repeat that arrives while the first runs waits for its answer; the route runs once', async () => {
  const keys = new ObservedKeys(database.db);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inRoute = new Promise<void>((r) => (entered = r));
  const { send, calls } = appWith(keys, async (k) => {
    entered();
    await released;
    return ok(k);
  });
  const key = newKey();
  const first = send(key);
  await inRoute;
  const waiting = new Promise<void>((r) => (keys.onFind = r));
  const second = send(key);
  await waiting; // the repeat found the claim unanswered and is waiting
  release();
  const [a, b] = await Promise.all([first, second]);
  assert.deepEqual([a.status, await a.json(), a.headers.get('idempotent-replayed')], [200, { created: 1 }, null]);
  assert.deepEqual([b.status, await b.json(), b.headers.get('idempotent-replayed')], [200, { created: 1 }, 'true']);
  assert.equal(calls(), 1);
});

test('a repeat still unanswered after the wait gets 409 with Retry-After; once answered it replays', async () => {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const { send, calls } = appWith(
    new IdempotencyKeysRepo(database.db),
    async (k) => {
      await released;
      return ok(k);
    },
    50,
  );
  const key = newKey();
  const first = send(key);
  // The first claims before the repeat: wait until its claim is in the table.
  while ((await new IdempotencyKeysRepo(database.db).find({ apiKeyId: 'k', key })) === null) await new Promise((r) => setImmediate(r));
  const busy = await send(key);
  assert.equal(busy.status, 409);
  assert.match(((await busy.json()) as { detail: string }).detail, /still being processed/);
  assert.equal(busy.headers.get('retry-after'), '5');
  release();
  assert.equal((await first).status, 200);
  const later = await send(key);
  assert.deepEqual([later.status, later.headers.get('idempotent-replayed')], [200, 'true']);
  assert.equal(calls(), 1);
});

test('a claim left by a process that died is taken over after its lease by the same request, not another', async () => {
  const keys = new IdempotencyKeysRepo(database.db, { leaseMs: 200 });
  const { send, calls } = appWith(keys, ok, 30_000);
  const key = newKey();
  const dead = await keys.claim(
    { apiKeyId: 'k', key },
    requestFingerprint('POST', '/v1/create', new TextEncoder().encode(BODY)),
    new Date(),
  );
  assert.ok(dead.claimed);
  const other = await send(key, '{"x":2}');
  assert.equal(other.status, 422);
  const res = await send(key);
  assert.deepEqual([res.status, await res.json()], [200, { created: 1 }]);
  assert.equal(calls(), 1);
});

test('no header: the route runs each time and nothing is stored', async () => {
  const keys = new IdempotencyKeysRepo(database.db);
  const app = new Hono<AppEnv>();
  let runs = 0;
  app.use('/v1/create', idempotency({ keys, clock: () => new Date(), logger: pino({ level: 'silent' }) }));
  app.post('/v1/create', (c) => c.json({ runs: ++runs }));
  for (let i = 0; i < 3; i++) assert.equal((await app.request('/v1/create', { method: 'POST', body: BODY })).status, 200);
  assert.equal(runs, 3);
});
