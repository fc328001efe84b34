// Direct upload from the dashboard: files dropped on the drop zone (or chosen) go up in presigned parts
// with a progress bar, then show in the files list as STORED, byte for byte; deleting from the list.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { makeClip, startService, waitForFile, type ServiceFixture } from '../harness.ts';
import { launchBrowser, openDashboard, signIn } from './dashboard-fixture.ts';

const run = promisify(execFile);
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

let dir: string;
let svc: ServiceFixture;
let browser: Browser;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ffop-dashboard-files-'));
  svc = await startService();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await svc?.close();
  await rm(dir, { recursive: true, force: true });
});

/** The file the service stored under `name`, once STORED, and its bytes as served at its storage URL. */
async function storedFile(name: string) {
  const api = svc.client();
  const listed = (await api.get('/v1/files?limit=1000')).body.find((f: any) => f.original_file_url === name);
  assert.ok(listed, `a file named ${name} is listed`);
  const file = await waitForFile(api, listed.file_id);
  const bytes = Buffer.from(await (await fetch(file.storage_url)).arrayBuffer());
  return { file, bytes };
}

test('a dropped file is uploaded with a progress bar to 100% and shows STORED in the list', async () => {
  const clip = await readFile(await makeClip(dir, 'clip.mp4', 1));
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    await d.page.click('header.top >> text=Files');
    await d.page.locator('.drop-zone').waitFor();
    // What a drag from the desktop delivers: a DataTransfer holding the file.
    const transfer = await d.page.evaluateHandle(
      ({ base64, name }) => {
        const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], name, { type: 'video/mp4' }));
        return dt;
      },
      { base64: clip.toString('base64'), name: 'dropped clip.mp4' },
    );
    await d.page.dispatchEvent('.drop-zone', 'dragover', { dataTransfer: transfer });
    await d.page.locator('.drop-zone.dragging').waitFor();
    await d.page.dispatchEvent('.drop-zone', 'drop', { dataTransfer: transfer });

    const upload = d.page.locator('.upload', { hasText: 'dropped clip.mp4' });
    await upload.locator('.state', { hasText: 'uploaded' }).waitFor();
    assert.equal(await upload.locator('progress').getAttribute('value'), '100');
    assert.equal(await upload.locator('.percent').textContent(), '100%');

    // The name init-upload accepts, and the very bytes that were dropped.
    const { file, bytes } = await storedFile('dropped_clip.mp4');
    assert.equal(file.status, 'STORED');
    assert.equal(file.file_type, 'video');
    assert.equal(sha256(bytes), sha256(clip));
    const row = d.page.locator(`tr[data-file-id="${file.file_id}"]`);
    await row.locator('[data-status="STORED"]').waitFor();
    assert.match((await row.locator('.name').textContent()) ?? '', /^dropped_clip\.mp4/);

    // A stored file can be the input of a new command.
    await row.locator('a', { hasText: 'Use as input' }).click();
    await d.page.locator('#ffmpeg-command').waitFor();
    assert.equal(await d.page.locator('fieldset[data-prefix="in_"] .pair >> nth=0 >> .value').inputValue(), file.storage_url);
    assert.deepEqual(d.problems, []);
  } finally {
    await d.close();
  }
});

test('a chosen file larger than one part goes up in several parts and is stored whole; a file is deleted from the list', async () => {
  // 110 s of 48 kHz stereo PCM: about 21 MB, two parts of the service's default 16 MiB.
  const wav = join(dir, 'tone.wav');
  await run('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=110', '-ac', '2', '-ar', '48000', wav]);
  const original = await readFile(wav);
  assert.ok(original.length > 16 * 1024 * 1024 + 1);
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    await d.page.goto('/dashboard#/files');
    const parts: string[] = [];
    d.page.on('request', (req) => {
      if (req.method() === 'PUT') parts.push(new URL(req.url()).searchParams.get('partNumber') ?? '?');
    });
    await d.page.setInputFiles('#file-input', wav);
    const upload = d.page.locator('.upload', { hasText: 'tone.wav' });
    await upload.locator('.state', { hasText: 'uploaded' }).waitFor();
    assert.equal(await upload.locator('progress').getAttribute('value'), '100');
    assert.deepEqual(parts, ['1', '2']);

    const { file, bytes } = await storedFile('tone.wav');
    assert.equal(file.file_type, 'audio');
    assert.equal(sha256(bytes), sha256(original));

    const row = d.page.locator(`tr[data-file-id="${file.file_id}"]`);
    await row.locator('[data-status="STORED"]').waitFor();
    await row.locator('button', { hasText: 'Delete' }).click();
    await row.locator('button', { hasText: 'Really delete' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await svc.client().get(`/v1/files/${file.file_id}`)).body.is_deleted, true);
    assert.deepEqual(d.problems, []);
  } finally {
    await d.close();
  }
});
