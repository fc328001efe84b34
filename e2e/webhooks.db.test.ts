// Webhooks end to end through the public API: set, read, test, delete; real ffmpeg commands and
// store-file announced with exactly their GET records, verified with the Standard Webhooks library;
// the delivery log; the refusals; scoping by account and environment; the CLI through the admin socket.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { adminSocketPath, runThroughAdminSocket } from '../api/cli/admin-socket.ts';
import { makeClip, startMediaServer, startService, waitForFile, type ApiClient, type MediaServer, type ServiceFixture } from './harness.ts';

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A webhook receiver on 127.0.0.1: every request is kept and answered 200. */
async function startReceiver() {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    allowEntry: `127.0.0.1:${port}`,
    received,
    /** The requests to `path`, once there are `count` of them (fails after 60 s). */
    async waitFor(path: string, count = 1): Promise<Received[]> {
      for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 20))) {
        const mine = received.filter((x) => x.path === path);
        if (mine.length >= count) return mine;
        if (Date.now() > deadline) assert.fail(`${path} got ${mine.length} of ${count} webhook requests`);
      }
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('webhooks', () => {
  let media: MediaServer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let svc: ServiceFixture;

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 1));
    receiver = await startReceiver();
    svc = await startService({ allow: [media.allowEntry], webhookAllow: [receiver.allowEntry] });
  });
  after(async () => {
    await svc?.close();
    await receiver?.close();
    await media?.close();
  });

  /** Sets the webhook of `api`'s environment to the receiver's `path`; returns the secret. */
  async function setWebhook(api: ApiClient, path: string): Promise<string> {
    const res = await api.request('PUT', '/v1/webhook', { url: `${receiver.url}${path}` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.secret;
  }

  const verified = (secret: string, r: Received) => new Webhook(secret).verify(r.body, r.headers) as { data: any; timestamp: number };

  test('PUT, GET and DELETE: the secret is shown when set or rotated only', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    assert.deepEqual((await api.get('/v1/webhook')).body, { detail: 'no webhook is set for environment main' });
    const set = await api.request('PUT', '/v1/webhook', { url: 'https://example.com/hooks' });
    assert.equal(set.status, 200);
    assert.deepEqual(Object.keys(set.body), ['url', 'secret', 'environment_name', 'created_at', 'updated_at']);
    assert.match(set.body.secret, /^whsec_/);
    assert.equal(set.body.environment_name, 'main');
    const read = await api.get('/v1/webhook');
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, {
      url: 'https://example.com/hooks',
      environment_name: 'main',
      created_at: set.body.created_at,
      updated_at: set.body.updated_at,
    });

    const moved = await api.request('PUT', '/v1/webhook', { url: 'https://example.com/other' });
    assert.equal(moved.body.secret, null);
    assert.equal(moved.body.url, 'https://example.com/other');
    assert.equal(moved.body.created_at, set.body.created_at);
    const rotated = await api.request('PUT', '/v1/webhook', { url: 'https://example.com/other', rotate_secret: true });
    assert.match(rotated.body.secret, /^whsec_/);
    assert.notEqual(rotated.body.secret, set.body.secret);

    assert.equal((await api.request('DELETE', '/v1/webhook')).status, 204);
    assert.equal((await api.get('/v1/webhook')).status, 404);
    assert.deepEqual((await api.request('DELETE', '/v1/webhook')).body, { detail: 'no webhook is set for environment main' });
    assert.equal((await api.post('/v1/webhook/test', undefined)).status, 404);
  });

  test('a real ffmpeg command: the receiver gets exactly its poll record, signed; the log shows the delivery', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const secret = await setWebhook(api, '/command');
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -vf scale=160:-2 -c:a copy {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      metadata: { job: 42 },
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const [got] = await receiver.waitFor('/command');
    const payload = verified(secret, got);
    assert.deepEqual(payload.data, (await api.get(`/v1/commands/${id}`)).body);
    assert.equal(payload.data.output_files.out_1.status, 'STORED');
    assert.ok(Math.abs(payload.timestamp - Date.now()) < 3600_000, 'a unix time in ms');
    assert.match(got.headers['webhook-id'], /^msg_[0-9a-f-]{36}$/);
    assert.equal(got.headers['content-type'], 'application/json');

    const log = (await api.get('/v1/webhook/deliveries')).body;
    assert.equal(log.length, 1);
    assert.equal(`msg_${log[0].delivery_id}`, got.headers['webhook-id']);
    assert.equal(log[0].event_type, 'command.finished');
    assert.equal(log[0].subject_id, id);
    assert.equal(log[0].status, 'DELIVERED');
    assert.equal(log[0].attempt_count, 1);
    assert.equal(log[0].attempts[0].status_code, 200);
    assert.equal(log[0].attempts[0].error, null);
    assert.equal(typeof log[0].attempts[0].duration_ms, 'number');
    assert.equal(log[0].next_attempt_at, null);
    assert.ok(log[0].finished_at);
    assert.equal(receiver.received.filter((x) => x.path === '/command').length, 1);
  });

  test('store-file: file.finished carries exactly the file record; a test delivery; the log newest first with limit and offset', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const secret = await setWebhook(api, '/files');
    const fileId = (await api.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4` })).body.file_id;
    const file = await waitForFile(api, fileId);
    assert.equal(file.status, 'STORED');
    const [stored] = await receiver.waitFor('/files');
    assert.deepEqual(verified(secret, stored).data, (await api.get(`/v1/files/${fileId}`)).body);

    const test = await api.post('/v1/webhook/test', undefined);
    assert.equal(test.status, 202);
    assert.match(test.body.delivery_id, /^[0-9a-f-]{36}$/);
    const [, tested] = await receiver.waitFor('/files', 2);
    assert.deepEqual(verified(secret, tested).data, { message: 'test delivery from ffmpeg-operator', environment_name: 'main' });
    assert.equal(tested.headers['webhook-id'], `msg_${test.body.delivery_id}`);

    const log = (await api.get('/v1/webhook/deliveries')).body;
    assert.deepEqual(
      log.map((d: any) => [d.event_type, d.subject_id]),
      [
        ['webhook.test', null],
        ['file.finished', fileId],
      ],
    );
    assert.deepEqual((await api.get('/v1/webhook/deliveries?limit=1&offset=1')).body, [log[1]]);
    for (const query of ['limit=0', 'limit=1001', 'offset=-1', 'limit=x']) {
      const res = await api.get(`/v1/webhook/deliveries?${query}`);
      assert.equal(res.status, 422, query);
      assert.equal(res.body.detail[0].loc[0], 'query');
    }
  });

  test('attack: test deliveries are limited per account: the 11th in a minute is a 429 with Retry-After; another account is not held up', async () => {
    const flooder = svc.client(await svc.newAccount('pro'));
    await setWebhook(flooder, '/flood');
    const once = flooder.withoutRetries(); // the 429 is what is tested
    const answers = await Promise.all(Array.from({ length: 40 }, () => once.post('/v1/webhook/test', undefined)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [...Array<number>(10).fill(202), ...Array<number>(30).fill(429)]);
    const refused = answers.find((a) => a.status === 429)!;
    const wait = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60, `Retry-After: ${wait}`);
    assert.match(refused.body.detail, /^Too many test deliveries: at most 10 test deliveries a minute per account; retry after \d+ s$/);
    assert.equal((await flooder.get('/v1/webhook/deliveries')).body.length, 10);
    const other = svc.client(await svc.newAccount('pro'));
    await setWebhook(other, '/other');
    assert.equal((await other.post('/v1/webhook/test', undefined)).status, 202);
  });

  test('bad webhook URLs are refused with 422 at body.url; nothing is set', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const refused: [unknown, RegExp][] = [
      ['ftp://example.com/x', /http or https/],
      ['not a url', /valid URL/],
      ['https://user:pw@example.com/hooks', /credentials/],
      ['http://127.0.0.1:9/hooks', /127\.0\.0\.1 is not a public address/],
      ['http://169.254.169.254/latest/meta-data', /not a public address/],
      ['http://[::1]:8080/hooks', /not a public address/],
      ['http://10.0.0.7/hooks', /not a public address/],
      [`https://example.com/${'a'.repeat(2048)}`, /at most 2048 characters/],
      [42, /valid string/],
    ];
    for (const [url, message] of refused) {
      const res = await api.request('PUT', '/v1/webhook', { url });
      assert.equal(res.status, 422, `${String(url).slice(0, 60)}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body.detail[0].loc, ['body', 'url']);
      assert.match(res.body.detail[0].msg, message);
    }
    const missing = await api.request('PUT', '/v1/webhook', {});
    assert.deepEqual(missing.body.detail[0], { loc: ['body', 'url'], msg: 'Field required', type: 'missing' });
    for (const notBoolean of ['perhaps', 'true', 1]) {
      const badFlag = await api.request('PUT', '/v1/webhook', { url: 'https://example.com/x', rotate_secret: notBoolean });
      assert.equal(badFlag.status, 422);
      assert.deepEqual(badFlag.body.detail[0], {
        loc: ['body', 'rotate_secret'],
        msg: 'Input should be a valid boolean',
        type: 'bool_type',
      });
    }
    assert.equal((await api.get('/v1/webhook')).status, 404);
    // The allowlist (FFOP_ALLOW_ADDRESSES) that lets downloads reach the receiver lets its URL be set.
    assert.equal((await api.request('PUT', '/v1/webhook', { url: `${receiver.url}/allowed` })).status, 200);
  });

  test('scoping: another environment of the account and another account neither see nor get the webhook', async () => {
    const main = svc.client(await svc.newAccount('pro'));
    const account = (await svc.service.accounts.authenticate(main.key))!.account;
    const testEnv = svc.client((await svc.service.accounts.createKey(account.id, 'test')).key);
    const stranger = svc.client(await svc.newAccount('pro'));
    await setWebhook(main, '/scoped-main');
    assert.deepEqual((await testEnv.get('/v1/webhook')).body, { detail: 'no webhook is set for environment test' });
    assert.equal((await stranger.get('/v1/webhook')).status, 404);
    assert.equal((await stranger.post('/v1/webhook/test', undefined)).status, 404);
    assert.equal((await stranger.request('DELETE', '/v1/webhook')).status, 404);

    // The test environment's command ends: main's webhook hears nothing of it.
    const id = await testEnv.submit({
      ffmpeg_command: '-i {{in_1}} -t 0.2 -c copy {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'cut.mp4' },
    });
    await testEnv.waitForEnd(id);
    // A later test delivery of main's arrives; had the command been announced to main, it would be logged before it.
    await main.post('/v1/webhook/test', undefined);
    const got = await receiver.waitFor('/scoped-main');
    assert.equal(got.length, 1);
    assert.deepEqual(
      (await main.get('/v1/webhook/deliveries')).body.map((d: any) => d.event_type),
      ['webhook.test'],
    );
    assert.deepEqual((await testEnv.get('/v1/webhook/deliveries')).body, []);
    assert.deepEqual((await stranger.get('/v1/webhook/deliveries')).body, []);
  });

  test('the CLI, through the running service: set, show, test, deliveries, delete', async () => {
    const accountName = 'webhook-cli';
    const account = await svc.service.accounts.createAccount(accountName, 'pro');
    const key = (await svc.service.accounts.createKey(account.id, 'dev')).key;
    const cli = async (...args: string[]) => {
      const out: string[] = [];
      const code = await runThroughAdminSocket(adminSocketPath(svc.dataDir), args, (l) => out.push(l));
      return { code, out };
    };
    const set = await cli('webhook', 'set', accountName, '--env', 'dev', '--url', `${receiver.url}/cli`);
    assert.equal(set.code, 0, set.out.join('\n'));
    const secret = /secret: (whsec_\S+)/.exec(set.out.join('\n'))?.[1];
    assert.ok(secret, set.out.join('\n'));
    assert.equal((await svc.client(key).get('/v1/webhook')).body.url, `${receiver.url}/cli`);
    assert.match((await cli('webhook', 'show', accountName, '--environment', 'dev')).out[0], new RegExp(`^${receiver.url}/cli\\tdev\\t`));
    const again = await cli('webhook', 'set', accountName, '--env', 'dev', '--url', `${receiver.url}/cli`);
    assert.match(again.out.join('\n'), /secret: unchanged/);

    const queued = await cli('webhook', 'test', accountName, '--env', 'dev');
    const deliveryId = /queued test delivery (\S+)/.exec(queued.out[0])?.[1];
    const [got] = await receiver.waitFor('/cli');
    assert.deepEqual(verified(secret, got).data, { message: 'test delivery from ffmpeg-operator', environment_name: 'dev' });
    let lines: string[] = [];
    for (const deadline = Date.now() + 10_000; !lines[0]?.includes('DELIVERED') && Date.now() < deadline;) {
      lines = (await cli('webhook', 'deliveries', accountName, '--env', 'dev', '--limit', '5')).out;
    }
    assert.match(lines[0], new RegExp(`^${deliveryId}\\twebhook\\.test\\t-\\tDELIVERED\\tattempts 1\\tlast 200 ok`));

    for (const [args, message] of [
      [['webhook', 'set', accountName, '--env', 'dev', '--url', 'http://127.0.0.1:9/x'], /--url: 127\.0\.0\.1 is not a public address/],
      [['webhook', 'set', accountName, '--env', 'dev'], /needs --url/],
      [['webhook', 'show', accountName], /no webhook is set for account webhook-cli, environment main/],
      [['webhook', 'deliveries', accountName, '--env', 'dev', '--limit', '0'], /--limit/],
      [['webhook', 'show', 'nobody'], /no account named "nobody"/],
    ] as const) {
      const res = await cli(...args);
      assert.equal(res.code, 2, res.out.join('\n'));
      assert.match(res.out.join('\n'), message);
    }
    assert.equal((await cli('webhook', 'delete', accountName, '--env', 'dev')).code, 0);
    assert.equal((await svc.client(key).get('/v1/webhook')).status, 404);
  });
});
