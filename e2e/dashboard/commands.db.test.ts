// The dashboard in headless Chromium against the embedded service: signing in, submitting a command
// through the form, following it in the list to SUCCESS, its outputs played on its page, a failed
// command's error, and the form's validation errors.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { makeClip, startMediaServer, startService, type MediaServer, type ServiceFixture } from '../harness.ts';
import { launchBrowser, openDashboard, signIn, unexpected } from './dashboard-fixture.ts';

let media: MediaServer;
let svc: ServiceFixture;
let browser: Browser;

before(async () => {
  media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 2));
  svc = await startService({ allow: [media.allowEntry] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await svc?.close();
  await media?.close();
});

test('sign in: a refused key is said so; a good key opens the commands list and stays in the tab only', async () => {
  const d = await openDashboard(browser, svc.url);
  try {
    await d.page.fill('#api-key', 'not-a-valid-key');
    await d.page.click('form button[type=submit]');
    await d.page.locator('.error', { hasText: 'This API key was refused' }).waitFor();
    assert.equal(await d.page.locator('header.top').count(), 0, 'still signed out');
    assert.equal(await d.page.evaluate(() => sessionStorage.length), 0);

    await signIn(d.page, svc.key);
    await d.page.locator('h1', { hasText: 'Commands' }).waitFor();
    const stored = await d.page.evaluate(() => ({
      session: Object.values(sessionStorage),
      local: localStorage.length,
      cookie: document.cookie,
    }));
    assert.deepEqual(stored, { session: [svc.key], local: 0, cookie: '' });

    await d.page.reload();
    await d.page.locator('h1', { hasText: 'Commands' }).waitFor();
    await d.page.click('text=Sign out');
    await d.page.locator('#api-key').waitFor();
    assert.equal(await d.page.evaluate(() => sessionStorage.length), 0);
    assert.deepEqual(unexpected(d.problems, /401/), []);
  } finally {
    await d.close();
  }
});

test('a key revoked while signed in takes the tab back to the sign-in form, saying why', async () => {
  const account = await svc.service.accounts.createAccount('revoked-later', 'pro');
  const { id: keyId, key } = await svc.service.accounts.createKey(account.id, 'main');
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, key);
    await d.page.locator('text=No commands yet.').waitFor();
    assert.equal(await svc.service.accounts.revokeKey(keyId, new Date()), true);
    // The list's next refresh is refused.
    await d.page.locator('.error', { hasText: 'The API key was refused: sign in again.' }).waitFor();
    await d.page.locator('#api-key').waitFor();
    assert.equal(await d.page.evaluate(() => sessionStorage.length), 0);
    assert.deepEqual(unexpected(d.problems, /401/), []);
  } finally {
    await d.close();
  }
});

test('a command submitted through the form shows in the list, reaches SUCCESS, and its outputs play on its page', async () => {
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    await d.page.click('header.top >> text=New command');
    await d.page.locator('.explain', { hasText: '{{in_1}}' }).waitFor();
    await d.page.fill(
      '#ffmpeg-command',
      '-i {{in_1}} -map 0:v -c:v libx264 -preset ultrafast -t 1 {{out_video}} -map 0:a -t 1 {{out_audio}} -map 0:v -frames:v 1 {{out_image}}',
    );
    await d.page.fill('fieldset[data-prefix="in_"] .pair >> nth=0 >> .value', `${media.url}/clip.mp4`);
    const outputs = d.page.locator('fieldset[data-prefix="out_"]');
    await outputs.locator('button', { hasText: 'Add' }).click();
    await outputs.locator('button', { hasText: 'Add' }).click();
    const rows: [string, string][] = [
      ['out_video', 'small.mp4'],
      ['out_audio', 'sound.m4a'],
      ['out_image', 'frame.png'],
    ];
    for (const [i, [alias, name]] of rows.entries()) {
      await outputs.locator('.pair').nth(i).locator('.alias').fill(alias);
      await outputs.locator('.pair').nth(i).locator('.value').fill(name);
    }
    await d.page.fill('#vcpu-count', '1');
    await d.page.fill('#max-command-run-seconds', '60');
    await d.page.click('form button[type=submit]');
    await d.page.waitForURL(/#\/commands\/[0-9a-f-]{36}$/);
    const id = new URL(d.page.url()).hash.split('/').pop()!;

    // What the form sent is what was typed.
    const record = (await svc.client().get(`/v1/commands/${id}`)).body;
    assert.deepEqual(record.original_request.output_files, Object.fromEntries(rows));
    assert.deepEqual(record.original_request.input_files, { in_1: `${media.url}/clip.mp4` });
    assert.equal(record.vcpu_count, 1);
    assert.equal(record.original_request.max_command_run_seconds, 60);

    await d.page.click('header.top >> text=Commands');
    const row = d.page.locator(`tr[data-command-id="${id}"]`);
    await row.waitFor();
    await row.locator('[data-status="SUCCESS"]').waitFor({ timeout: 60_000 });

    await row.locator('a.id').click();
    await d.page.waitForURL(new RegExp(`#/commands/${id}$`));
    await d.page.locator('.facts [data-status="SUCCESS"]').waitFor();
    // Each player loaded its file from the storage URL (HAVE_METADATA or more; the image decoded).
    for (const player of ['[data-alias="out_video"] video', '[data-alias="out_audio"] audio']) {
      await d.page.waitForFunction((selector) => (document.querySelector<HTMLMediaElement>(selector)?.readyState ?? 0) >= 1, player);
    }
    await d.page.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>('[data-alias="out_image"] img');
      return img !== null && img.complete && img.naturalWidth > 0;
    });
    const sizes = await d.page.evaluate(() => ({
      video: document.querySelector<HTMLVideoElement>('[data-alias="out_video"] video')!.duration,
      image: document.querySelector<HTMLImageElement>('[data-alias="out_image"] img')!.naturalWidth,
    }));
    assert.ok(sizes.video > 0.5 && sizes.video < 1.5, `video duration ${sizes.video}`);
    assert.equal(sizes.image, 320);
    assert.deepEqual(d.problems, []);
  } finally {
    await d.close();
  }
});

test('a failed command shows its error status and message in the list and on its page', async () => {
  const api = svc.client();
  const id = await api.submit({
    ffmpeg_command: '-i {{in_1}} -map 0:s {{out_1}}',
    input_files: { in_1: `${media.url}/clip.mp4` },
    output_files: { out_1: 'subs.srt' },
  });
  const { record } = await api.waitForEnd(id);
  assert.equal(record.status, 'FAILED');
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    const row = d.page.locator(`tr[data-command-id="${id}"]`);
    await row.locator('[data-status="FAILED"]').waitFor();
    assert.equal(await row.locator('.error-status').textContent(), record.error_status);

    await row.locator('a.id').click();
    await d.page.locator('.failure').waitFor();
    assert.equal(await d.page.locator('.failure .error-status').textContent(), record.error_status);
    assert.equal(await d.page.locator('.failure .error-message').textContent(), record.error_message);
    assert.match(record.error_message, /matches no streams/);
    assert.equal(await d.page.locator('button', { hasText: 'Cancel command' }).count(), 0, 'an ended command has no cancel button');
    assert.deepEqual(d.problems, []);
  } finally {
    await d.close();
  }
});

test("the form shows the service's validation errors by field and submits nothing", async () => {
  const before = (await svc.client().get('/v1/commands?limit=1000')).body.length;
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    await d.page.click('header.top >> text=New command');
    await d.page.fill('fieldset[data-prefix="in_"] .pair >> nth=0 >> .value', `${media.url}/clip.mp4`);
    await d.page.fill('fieldset[data-prefix="out_"] .pair >> nth=0 >> .alias', 'result');
    await d.page.fill('#vcpu-count', '0');
    await d.page.click('form button[type=submit]');
    const errors = d.page.locator('.field-errors li');
    await errors.first().waitFor();
    const texts = await errors.allTextContents();
    assert.ok(
      texts.some((t) => t.startsWith('output_files')),
      texts.join('\n'),
    );
    assert.ok(
      texts.some((t) => t.startsWith('vcpu_count')),
      texts.join('\n'),
    );
    assert.match(d.page.url(), /#\/new$/);
    assert.equal((await svc.client().get('/v1/commands?limit=1000')).body.length, before);
    assert.deepEqual(unexpected(d.problems, /422/), []);
  } finally {
    await d.close();
  }
});
