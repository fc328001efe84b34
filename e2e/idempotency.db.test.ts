// Idempotency-Key end to end in embedded mode: a repeat answers the first answer and creates nothing,
// also when 50 clients send it at once; another request with the key is a 422; keys are scoped by API
// key; store-file and init-upload replay; refusals replay; expired keys are swept.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { PlansRepo } from '../core/accounts/plans-repo.ts';
import { rowsOf } from '../core/db/migrate.ts';
import { IDEMPOTENCY_KEY_TTL_MS, IdempotencyKeysRepo } from '../core/idempotency/idempotency-keys-repo.ts';
import { startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from './harness.ts';

const CHEAP = { ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}', output_files: { out_1: 'a.png' } };

describe('idempotency keys, embedded mode', () => {
  let media: MediaServer;
  let svc: ServiceFixture;
  let api: ApiClient;
  let n = 0;
  /** A key no other test uses. */
  const newKey = (label: string) => `${label}-${++n}-${Date.now()}`;
  const post = (client: ApiClient, path: string, body: unknown, key?: string) =>
    client.request('POST', path, body, key === undefined ? {} : { 'Idempotency-Key': key });
  const commandIds = async (client: ApiClient): Promise<string[]> =>
    (await client.get('/v1/commands?limit=100')).body.map((c: { command_id: string }) => c.command_id);
  /** A client of a new account on a plan whose rate limit never binds (50 requests at once are the point). */
  const newClient = async () => svc.client(await svc.newAccount('idempotency'));

  before(async () => {
    media = await startMediaServer((dir) => writeFile(join(dir, 'hello.txt'), 'hello'));
    svc = await startService({ allow: [media.allowEntry] });
    await new PlansRepo(svc.service.database.db).create({
      name: 'idempotency',
      maxVcpus: 4,
      maxCommandRunSeconds: 300,
      requestsPerMinute: 1_000_000,
      storageQuotaBytes: 1e10,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: true,
    });
    api = await newClient();
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  test('a repeat answers the same command_id with Idempotent-Replayed, and only one command exists and runs', async () => {
    const client = await newClient();
    const key = newKey('submit');
    const first = await post(client, '/v1/run-ffmpeg-command', CHEAP, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const again = await post(client, '/v1/run-ffmpeg-command', CHEAP, key);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.match(again.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(await commandIds(client), [first.body.command_id]);
    assert.equal((await client.waitForEnd(first.body.command_id)).record.status, 'SUCCESS');
    // After the command ended, too.
    const late = await post(client, '/v1/run-ffmpeg-command', CHEAP, key);
    assert.deepEqual(late.body, first.body);
    assert.deepEqual(await commandIds(client), [first.body.command_id]);
    // Without the header nothing changes: each submit is a command.
    await client.submit(CHEAP);
    assert.equal((await commandIds(client)).length, 2);
  });

  test('chains replay too; the same key on another path is another request (422)', async () => {
    const client = await newClient();
    const key = newKey('chain');
    const chain = { ffmpeg_commands: [CHEAP.ffmpeg_command], output_files: CHEAP.output_files };
    const first = await post(client, '/v1/run-chained-ffmpeg-commands', chain, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const again = await post(client, '/v1/run-chained-ffmpeg-commands', chain, key);
    assert.deepEqual([again.status, again.body, again.headers.get('idempotent-replayed')], [200, first.body, 'true']);
    const elsewhere = await post(client, '/v1/run-ffmpeg-command', CHEAP, key);
    assert.equal(elsewhere.status, 422);
    assert.deepEqual(elsewhere.body.detail[0].loc, ['header', 'Idempotency-Key']);
    assert.deepEqual(await commandIds(client), [first.body.command_id]);
  });

  test('50 clients sending the same key at once: exactly one command, and all get its command_id', async () => {
    const client = await newClient();
    const key = newKey('burst');
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(client, '/v1/run-ffmpeg-command', CHEAP, key)));
    const ms = Date.now() - started;
    const statuses = answers.map((a) => a.status);
    assert.deepEqual(new Set(statuses), new Set([200]), JSON.stringify(answers.filter((a) => a.status !== 200).map((a) => a.body)));
    const ids = new Set(answers.map((a) => a.body.command_id));
    assert.equal(ids.size, 1);
    const stored = await commandIds(client);
    assert.deepEqual(stored, [...ids]);
    const replayed = answers.filter((a) => a.headers.get('idempotent-replayed') === 'true').length;
    console.log(
      `50 clients, one Idempotency-Key, at once (${svc.service.database.driver}): ${stored.length} command created, ` +
        `${ids.size} distinct command_id, ${replayed} replayed answers, all answered in ${ms} ms`,
    );
    assert.equal(replayed, 49);
  });

  test('the same key with a different body is a 422 naming the header, and creates nothing', async () => {
    const client = await newClient();
    const key = newKey('different');
    const first = await post(client, '/v1/run-ffmpeg-command', CHEAP, key);
    assert.equal(first.status, 200);
    const other = await post(client, '/v1/run-ffmpeg-command', { ...CHEAP, metadata: { n: 2 } }, key);
    assert.equal(other.status, 422);
    assert.deepEqual(other.body.detail[0].loc, ['header', 'Idempotency-Key']);
    assert.match(other.body.detail[0].msg, /Idempotency-Key was used with a different request/);
    // The same JSON with other bytes (spacing) is another request as well: the body's bytes are compared.
    const spaced = await post(client, '/v1/run-ffmpeg-command', JSON.stringify(CHEAP, null, 2), key);
    assert.equal(spaced.status, 422);
    assert.deepEqual(await commandIds(client), [first.body.command_id]);
  });

  test("keys are the API key's: another account's and the same account's second key are independent", async () => {
    const plan = 'idempotency';
    const account = await svc.service.accounts.createAccount(`idem-${Date.now()}`, plan);
    const one = svc.client((await svc.service.accounts.createKey(account.id, 'main')).key);
    const two = svc.client((await svc.service.accounts.createKey(account.id, 'main')).key);
    const stranger = await newClient();
    const key = newKey('shared');
    const a = await post(one, '/v1/run-ffmpeg-command', CHEAP, key);
    const b = await post(two, '/v1/run-ffmpeg-command', CHEAP, key);
    const c = await post(stranger, '/v1/run-ffmpeg-command', { ...CHEAP, metadata: { other: true } }, key);
    for (const r of [a, b, c]) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.headers.get('idempotent-replayed'), null);
    }
    assert.equal(new Set([a.body.command_id, b.body.command_id, c.body.command_id]).size, 3);
    assert.deepEqual(new Set(await commandIds(one)), new Set([a.body.command_id, b.body.command_id]));
    assert.deepEqual(await commandIds(stranger), [c.body.command_id]);
  });

  test('store-file and init-upload replay their first answer and store one file', async () => {
    const client = await newClient();
    const store = { file_url: `${media.url}/hello.txt` };
    const storeKey = newKey('store');
    const s1 = await post(client, '/v1/files/store-file', store, storeKey);
    const s2 = await post(client, '/v1/files/store-file', store, storeKey);
    assert.equal(s1.status, 200, JSON.stringify(s1.body));
    assert.deepEqual([s2.status, s2.body, s2.headers.get('idempotent-replayed')], [200, s1.body, 'true']);

    const init = { filename: 'up.bin', size_bytes: 12 * 1024 * 1024, part_size: 5 * 1024 * 1024 };
    const initKey = newKey('init');
    const i1 = await post(client, '/v1/files/init-upload', init, initKey);
    const i2 = await post(client, '/v1/files/init-upload', init, initKey);
    assert.equal(i1.status, 200, JSON.stringify(i1.body));
    assert.equal(i1.body.upload_urls.length, 3);
    assert.deepEqual([i2.status, i2.body, i2.headers.get('idempotent-replayed')], [200, i1.body, 'true']);

    const files = (await client.get('/v1/files')).body.map((f: { file_id: string }) => f.file_id);
    assert.deepEqual(new Set(files), new Set([s1.body.file_id, i1.body.file_id]));
  });

  test('a refusal replays as it was: a 422 stays a 422, a 403 stays a 403', async () => {
    const client = await newClient();
    const key = newKey('refused');
    const bad = { ...CHEAP, vcpu_count: 'many' };
    const r1 = await post(client, '/v1/run-ffmpeg-command', bad, key);
    assert.equal(r1.status, 422);
    assert.deepEqual(r1.body.detail[0].loc, ['body', 'vcpu_count']);
    const r2 = await post(client, '/v1/run-ffmpeg-command', bad, key);
    assert.deepEqual([r2.status, r2.body, r2.headers.get('idempotent-replayed')], [422, r1.body, 'true']);

    const free = svc.client(await svc.newAccount('free')); // no private files
    const privateKey = newKey('private');
    const p1 = await post(free, '/v1/files/init-upload', { filename: 'x.bin', size_bytes: 10, is_private: true }, privateKey);
    assert.equal(p1.status, 403, JSON.stringify(p1.body));
    const p2 = await post(free, '/v1/files/init-upload', { filename: 'x.bin', size_bytes: 10, is_private: true }, privateKey);
    assert.deepEqual([p2.status, p2.body, p2.headers.get('idempotent-replayed')], [403, p1.body, 'true']);
    assert.deepEqual(await commandIds(client), []);
  });

  test('invalid keys are a 422 naming the header, before anything is created', async () => {
    const client = await newClient();
    for (const key of ['x'.repeat(256), 'caf\u00e9', 'a\tb']) {
      const res = await post(client, '/v1/run-ffmpeg-command', CHEAP, key);
      assert.equal(res.status, 422, JSON.stringify(key));
      assert.deepEqual(res.body.detail[0].loc, ['header', 'Idempotency-Key']);
    }
    assert.equal((await post(client, '/v1/run-ffmpeg-command', CHEAP, 'x'.repeat(255))).status, 200);
    assert.equal((await commandIds(client)).length, 1);
  });

  test('the sweep removes keys older than 24 hours: the key is then new again', async () => {
    const client = await newClient();
    const key = newKey('sweep');
    const first = await post(client, '/v1/run-ffmpeg-command', CHEAP, key);
    assert.equal(first.status, 200);
    // The sweep the webhook worker runs every 10 minutes, as it would run a day later.
    const keys = new IdempotencyKeysRepo(svc.service.database.db);
    assert.equal(await keys.pruneExpired(new Date(Date.now() - 60_000), 1000), 0, 'nothing has expired yet');
    let pruned = 0;
    for (let k = -1; k !== 0; pruned += k) k = await keys.pruneExpired(new Date(Date.now() + IDEMPOTENCY_KEY_TTL_MS + 60_000), 1000);
    assert.ok(pruned >= 1);
    const next = await post(client, '/v1/run-ffmpeg-command', { ...CHEAP, metadata: { day: 2 } }, key);
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.notEqual(next.body.command_id, first.body.command_id);
    assert.equal(next.headers.get('idempotent-replayed'), null);
  });

  test('a 429 of the rate limit and a 401 are answered before the key is looked at: nothing is stored for them', async () => {
    const plans = new PlansRepo(svc.service.database.db);
    await plans.create({
      name: 'idempotency-slow',
      maxVcpus: 4,
      maxCommandRunSeconds: 300,
      requestsPerMinute: 3,
      storageQuotaBytes: 1e10,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: false,
    });
    const apiKey = await svc.newAccount('idempotency-slow');
    const client = svc.client(apiKey).withoutRetries();
    const keyId = (await svc.service.accounts.authenticate(apiKey))!.keyId;
    const keys = new IdempotencyKeysRepo(svc.service.database.db);
    let limited: string | null = null;
    for (let i = 0; i < 20 && limited === null; i++) {
      const key = newKey('limited');
      const res = await post(client, '/v1/run-ffmpeg-command', { ...CHEAP, metadata: { i } }, key);
      if (res.status === 429) limited = key;
      else assert.equal(res.status, 200);
    }
    assert.ok(limited, 'the rate limit never answered 429');
    assert.equal(await keys.find({ apiKeyId: keyId, key: limited }), null);

    const unknown = svc.client('ffo_nosuchkey_secret').withoutRetries();
    const refused = await post(unknown, '/v1/run-ffmpeg-command', CHEAP, 'unauthenticated');
    assert.equal(refused.status, 401);
    assert.equal(
      rowsOf(await svc.service.database.db.execute(sql`select 1 from idempotency_keys where key = 'unauthenticated'`)).length,
      0,
    );
  });

  test('requests without a key are unaffected (and the client of the other tests still works)', async () => {
    assert.equal((await api.post('/v1/run-ffmpeg-command', CHEAP)).status, 200);
  });
});
