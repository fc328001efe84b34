// A running command in the dashboard: ffmpeg's progress as a bar in the list and on its page, and the
// cancel button, after which the command ends FAILED with CANCELLED.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { makeClip, startMediaServer, startService, type MediaServer, type ServiceFixture } from '../harness.ts';
import { launchBrowser, openDashboard, signIn } from './dashboard-fixture.ts';

let media: MediaServer;
let svc: ServiceFixture;
let browser: Browser;

before(async () => {
  media = await startMediaServer((dir) => makeClip(dir, 'long.mp4', 30));
  svc = await startService({ allow: [media.allowEntry] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await svc?.close();
  await media?.close();
});

test('a running command shows its progress in the list and on its page, and the cancel button stops it', async () => {
  const api = svc.client();
  // -re: ffmpeg reads the 30 s clip in real time, so it runs long enough to watch and cancel.
  const id = await api.submit({
    ffmpeg_command: '-re -i {{in_1}} -vf scale=160:-2 {{out_1}}',
    input_files: { in_1: `${media.url}/long.mp4` },
    output_files: { out_1: 'small.mp4' },
    vcpu_count: 1,
  });
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    const row = d.page.locator(`tr[data-command-id="${id}"]`);
    await row.locator('progress').waitFor({ timeout: 60_000 });
    assert.equal(await row.locator('[data-status]').getAttribute('data-status'), 'PROCESSING');
    // The list's items carry the progress: the list page reads no command one by one.
    assert.deepEqual(
      d.answers.filter((a) => a.includes('/v1/commands/')),
      [],
    );

    await row.locator('a.id').click();
    const bar = d.page.locator('.facts progress');
    await bar.waitFor();
    const percent = Number(await bar.getAttribute('value'));
    assert.ok(percent >= 0 && percent < 100, `percent ${percent}`);
    assert.match((await d.page.locator('.facts .progress-text').textContent()) ?? '', /^\d+\.\d%/);

    await d.page.click('button:has-text("Cancel command")');
    await d.page.locator('.facts [data-status="FAILED"]').waitFor({ timeout: 30_000 });
    assert.equal(await d.page.locator('.failure .error-status').textContent(), 'CANCELLED');
    assert.equal(await d.page.locator('button:has-text("Cancel command")').count(), 0);
    assert.equal(await d.page.locator('.facts progress').count(), 0);
    const { record } = await api.waitForEnd(id);
    assert.equal(record.error_status, 'CANCELLED');
    assert.deepEqual(d.problems, []);
  } finally {
    await d.close();
  }
});
