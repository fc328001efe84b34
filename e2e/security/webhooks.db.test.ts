// Attack: make the webhook sender reach loopback or cloud metadata addresses (SSRF): as an IP literal
// in any spelling, behind a host name that resolves to loopback, in a URL stored before the allowlist
// changed, allowed for input downloads only (FFOP_ALLOW_ADDRESSES), and behind a redirect from an allowed receiver. Listeners on 127.0.0.1 and [::1] that are
// not on the allowlist count connections: they must see none, and each attempt records the refusal.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebhooksRepo } from '../../core/webhooks/webhooks-repo.ts';
import { startService, type ApiClient, type ServiceFixture } from '../harness.ts';

interface Listener {
  port: number;
  requests: string[];
  connections: () => number;
  close(): Promise<void>;
}

/** An HTTP server on `host` that counts connections and answers `status` (with `location` for a redirect). */
async function listener(host: string, status = 200, location?: string): Promise<Listener> {
  let connections = 0;
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    res.writeHead(status, location ? { location } : {}).end();
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('security: webhook deliveries reach no address the SSRF guard refuses', () => {
  let v4: Listener;
  let v6: Listener;
  let redirector: Listener;
  /** Allowed for input downloads (FFOP_ALLOW_ADDRESSES), not for webhooks. */
  let downloadsOnly: Listener;
  let svc: ServiceFixture;
  let attacker: ApiClient;
  let accountId: string;

  before(async () => {
    v4 = await listener('127.0.0.1');
    v6 = await listener('::1');
    // Allowed (as a test receiver would be), but it answers with a redirect to the forbidden listener.
    redirector = await listener('127.0.0.1', 307, `http://127.0.0.1:${v4.port}/stolen`);
    downloadsOnly = await listener('127.0.0.1');
    svc = await startService({ allow: [`127.0.0.1:${downloadsOnly.port}`], webhookAllow: [`127.0.0.1:${redirector.port}`] });
    const key = await svc.newAccount('pro');
    attacker = svc.client(key);
    accountId = (await svc.service.accounts.authenticate(key))!.account.id;
  });
  after(async () => {
    await svc?.close();
    for (const l of [v4, v6, redirector, downloadsOnly]) await l?.close();
  });

  const assertNoConnection = () => {
    assert.equal(v4.connections(), 0, 'the 127.0.0.1 listener was reached');
    assert.equal(v6.connections(), 0, 'the [::1] listener was reached');
  };

  /** Queues a test delivery and returns its log entry once its first attempt is recorded. */
  async function firstAttempt(): Promise<any> {
    const queued = await attacker.post('/v1/webhook/test', undefined);
    assert.equal(queued.status, 202, JSON.stringify(queued.body));
    for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 20))) {
      const log = (await attacker.get('/v1/webhook/deliveries')).body as any[];
      const mine = log.find((d) => d.delivery_id === queued.body.delivery_id);
      if (mine?.attempt_count > 0) return mine;
      if (Date.now() > deadline) assert.fail(`no attempt after 30 s: ${JSON.stringify(mine)}`);
    }
  }

  test('attack: loopback and metadata IP literals, in every spelling the URL parser reads, are refused at PUT with 422', async () => {
    for (const url of [
      `http://127.0.0.1:${v4.port}/hook`,
      `http://2130706433:${v4.port}/hook`, // 127.0.0.1 as one number
      `http://0x7f.0.0.1:${v4.port}/hook`, // hex
      `http://127.1:${v4.port}/hook`,
      `http://[::ffff:127.0.0.1]:${v4.port}/hook`, // IPv4-mapped IPv6
      `http://[::1]:${v6.port}/hook`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:a9fe:a9fe]/latest/meta-data/', // 169.254.169.254, mapped
      'http://[fd00:ec2::254]/latest/meta-data/', // AWS's IPv6 metadata address
      `http://0.0.0.0:${v4.port}/hook`,
    ]) {
      const res = await attacker.request('PUT', '/v1/webhook', { url });
      assert.equal(res.status, 422, `${url}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body.detail[0].loc, ['body', 'url']);
      assert.match(res.body.detail[0].msg, /is not a public address/, url);
    }
    assert.equal((await attacker.get('/v1/webhook')).status, 404);
    assertNoConnection();
  });

  test('attack: a host name that resolves to 127.0.0.1 is set, but never contacted; the attempt records the refusal', async () => {
    const set = await attacker.request('PUT', '/v1/webhook', { url: `http://localhost:${v4.port}/hook` });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const delivery = await firstAttempt();
    assert.equal(delivery.attempts[0].status_code, null);
    assert.match(delivery.attempts[0].error, /refused: localhost resolves to 127\.0\.0\.1, which is not a public address/);
    assert.equal(delivery.status, 'PENDING', 'retried later, in case the name changes');
    assertNoConnection();
  });

  test('attack: literal URLs stored before the allowlist changed are refused when sending (127.0.0.1, [::1], 169.254.169.254)', async () => {
    // Written straight into the database: the check at send time must hold on its own.
    const webhooks = new WebhooksRepo(svc.service.database.db);
    for (const [url, address] of [
      [`http://127.0.0.1:${v4.port}/hook`, '127.0.0.1'],
      [`http://[::1]:${v6.port}/hook`, '::1'],
      ['http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    ]) {
      await webhooks.set(accountId, 'main', url, false, new Date());
      const delivery = await firstAttempt();
      assert.equal(delivery.attempts[0].status_code, null, url);
      assert.match(delivery.attempts[0].error, new RegExp(`refused: ${address.replace(/\./g, '\\.')} is not a public address`), url);
    }
    assertNoConnection();
  });

  test('attack: an address allowed only for input downloads is refused at PUT and when sending', async () => {
    const url = `http://127.0.0.1:${downloadsOnly.port}/hook`;
    const res = await attacker.request('PUT', '/v1/webhook', { url });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.match(res.body.detail[0].msg, /is not a public address/);
    await new WebhooksRepo(svc.service.database.db).set(accountId, 'main', url, false, new Date());
    const delivery = await firstAttempt();
    assert.equal(delivery.attempts[0].status_code, null);
    assert.match(delivery.attempts[0].error, /refused: 127\.0\.0\.1 is not a public address/);
    assert.equal(downloadsOnly.connections(), 0, 'the downloads-only listener was reached');
  });

  test('attack: an allowed receiver that redirects to loopback is not followed', async () => {
    // Earlier deliveries still waiting for a retry end here ("webhook removed"): only this one is sent.
    assert.equal((await attacker.request('DELETE', '/v1/webhook')).status, 204);
    assert.equal((await attacker.request('PUT', '/v1/webhook', { url: `http://127.0.0.1:${redirector.port}/hook` })).status, 200);
    const delivery = await firstAttempt();
    assert.equal(delivery.attempts[0].status_code, 307);
    assert.match(delivery.attempts[0].error, /redirects are not followed/);
    assert.deepEqual(redirector.requests, ['/hook']);
    assertNoConnection();
  });
});
