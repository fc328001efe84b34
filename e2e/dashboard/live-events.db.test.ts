// The command page follows its command through the event stream (GET /v1/commands/{id}/events), not
// by polling; when the stream is refused it polls instead and still shows the command to its end.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startService, type ServiceFixture } from '../harness.ts';
import { launchBrowser, openDashboard, signIn, unexpected } from './dashboard-fixture.ts';

let svc: ServiceFixture;
let browser: Browser;

before(async () => {
  svc = await startService();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await svc?.close();
});

/** A few seconds of real-time work: long enough to open the page while it runs. */
const command = {
  ffmpeg_command: '-re -f lavfi -i testsrc=size=64x48:rate=10 -t 4 -c:v libx264 -preset ultrafast {{out_1}}',
  output_files: { out_1: 'live.mp4' },
  vcpu_count: 1,
};

test('the command page shows a running command to SUCCESS from its event stream, reading the record again only at its end', async () => {
  const id = await svc.client().submit(command);
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    await d.page.goto(`/dashboard#/commands/${id}`);
    await d.page.locator('.facts [data-status="SUCCESS"]').waitFor({ timeout: 60_000 });
    await d.page.locator('.outputs').waitFor();
    const opened = d.answers.indexOf(`200 /v1/commands/${id}/events`);
    assert.ok(opened >= 0, d.answers.join('\n'));
    // Once the stream is open the record is read once more, at the end: no polling.
    assert.equal(d.answers.slice(opened).filter((a) => a === `200 /v1/commands/${id}`).length, 1, d.answers.join('\n'));
    assert.deepEqual(d.problems, []);
  } finally {
    await d.close();
  }
});

test('when the stream is refused (429), the page polls and still shows the command to its end', async () => {
  const id = await svc.client().submit(command);
  const d = await openDashboard(browser, svc.url);
  try {
    await d.page.route('**/v1/commands/*/events', (route) =>
      route.fulfill({
        status: 429,
        contentType: 'application/json',
        headers: { 'retry-after': '5' },
        body: '{"detail":"Too many event streams"}',
      }),
    );
    await signIn(d.page, svc.key);
    await d.page.goto(`/dashboard#/commands/${id}`);
    await d.page.locator('.facts [data-status="SUCCESS"]').waitFor({ timeout: 60_000 });
    assert.ok(d.answers.filter((a) => a === `200 /v1/commands/${id}`).length >= 2, d.answers.join('\n'));
    assert.deepEqual(unexpected(d.problems, /status of 429/), []);
  } finally {
    await d.close();
  }
});
