// The webhook page: set a URL, the signing secret shown once (and that it is the secret the service
// signs with), a test delivery in the delivery log, rotating the secret, removing the webhook.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { startService, type ServiceFixture } from '../harness.ts';
import { launchBrowser, openDashboard, signIn, unexpected } from './dashboard-fixture.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
let svc: ServiceFixture;
let browser: Browser;

before(async () => {
  // A webhook receiver on this machine, allowed as a webhook target (FFOP_WEBHOOK_ALLOW_ADDRESSES).
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const { port } = receiver.address() as AddressInfo;
  receiverUrl = `http://127.0.0.1:${port}/hooks/ffmpeg`;
  svc = await startService({ webhookAllow: [`127.0.0.1:${port}`] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await svc?.close();
  await new Promise((r) => receiver?.close(r));
});

test('set a webhook, keep its secret shown once, send a test that the log shows delivered, rotate, remove', async () => {
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    await d.page.click('header.top >> text=Webhook');
    await d.page.locator('text=No webhook is set for this environment.').waitFor();

    await d.page.fill('#webhook-url', receiverUrl);
    await d.page.click('.webhook-form button[type=submit]');
    const secretBox = d.page.locator('#webhook-secret');
    await secretBox.waitFor();
    const secret = await secretBox.inputValue();
    assert.match(secret, /^whsec_[A-Za-z0-9+/=]+$/);
    assert.equal((await svc.client().get('/v1/webhook')).body.url, receiverUrl);

    await d.page.click('button:has-text("Send test")');
    await d.page.locator('.notice', { hasText: 'Test delivery' }).waitFor();
    const row = d.page.locator('tr[data-delivery-id]', { hasText: 'webhook.test' });
    await row.locator('[data-status="DELIVERED"]').waitFor();
    await row.locator('summary').click();
    assert.match((await row.locator('.attempts li').first().textContent()) ?? '', /HTTP 204/);
    // The secret the page showed is the one the delivery is signed with.
    assert.equal(received.length, 1);
    const payload = new Webhook(secret).verify(received[0].body, received[0].headers as Record<string, string>) as any;
    assert.equal(payload.data.environment_name, 'main');

    // Shown once: not after a reload; saving the URL again keeps the secret.
    await d.page.reload();
    await d.page.locator('#webhook-url').waitFor();
    assert.equal(await d.page.locator('#webhook-url').inputValue(), receiverUrl);
    assert.equal(await secretBox.count(), 0);
    await d.page.click('.webhook-form button[type=submit]');
    await d.page.locator('.notice', { hasText: 'signing secret is unchanged' }).waitFor();
    assert.equal(await secretBox.count(), 0);

    await d.page.check('#rotate-secret');
    await d.page.click('.webhook-form button[type=submit]');
    await secretBox.waitFor();
    const rotated = await secretBox.inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);

    await d.page.click('button:has-text("Remove webhook")');
    await d.page.click('button:has-text("Really remove")');
    await d.page.locator('text=No webhook is set for this environment.').waitFor();
    assert.equal((await svc.client().get('/v1/webhook')).status, 404);
    // GET /v1/webhook answers 404 while none is set: the browser logs it, the page says it.
    assert.deepEqual(unexpected(d.problems, /status of 404/), []);
  } finally {
    await d.close();
  }
});

test('a refused webhook URL shows the reason from the service', async () => {
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    await d.page.goto('/dashboard#/webhook');
    await d.page.fill('#webhook-url', 'ftp://example.com/hook');
    await d.page.click('.webhook-form button[type=submit]');
    await d.page.locator('.webhook-form .error', { hasText: 'url' }).waitFor();
    assert.equal((await svc.client().get('/v1/webhook')).status, 404);
  } finally {
    await d.close();
  }
});
