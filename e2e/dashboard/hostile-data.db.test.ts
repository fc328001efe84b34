// Attack: API data written by a client (metadata, a URL's file name, ffmpeg's error text quoting the
// command line, a dropped file's name) holding markup renders as text and runs nothing. The first test
// turns the Content-Security-Policy off, so that it proves the escaping alone; the second proves that the
// policy stops markup and script that some future code might inject anyway.
import assert from 'node:assert/strict';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { makeClip, startMediaServer, startService, waitForFile, type MediaServer, type ServiceFixture } from '../harness.ts';
import { launchBrowser, openDashboard, signIn } from './dashboard-fixture.ts';

// ffmpeg drops the quotes of a filter argument, so the error text carries the first one as written.
const IMG = '<img src=x onerror=window.__xss=1>';
const SCRIPT = '<script>window.__xss=2;alert(2)</script>';
const SVG = '<svg onload="window.__xss=3;alert(3)">';
const FILE_NAME = '<img src=x onerror="window.__xss=4;alert(4)">.mp4';

let media: MediaServer;
let svc: ServiceFixture;
let browser: Browser;
let commandId: string;
let errorMessage: string;
let storedFileId: string;

before(async () => {
  media = await startMediaServer(async (dir) => {
    await copyFile(await makeClip(dir, 'clip.mp4', 1), join(dir, FILE_NAME));
  });
  svc = await startService({ allow: [media.allowEntry] });
  browser = await launchBrowser();
  const api = svc.client();
  commandId = await api.submit({
    ffmpeg_command: `-i {{in_1}} -vf "scale=${IMG}" {{out_1}}`,
    input_files: { in_1: `${media.url}/clip.mp4` },
    output_files: { out_1: 'out.mp4' },
    metadata: { note: IMG, script: SCRIPT, svg: SVG },
  });
  const { record } = await api.waitForEnd(commandId);
  errorMessage = record.error_message;
  assert.ok(errorMessage.includes(IMG), errorMessage);
  const stored = await api.post('/v1/files/store-file', { file_url: `${media.url}/${FILE_NAME}` });
  storedFileId = stored.body.file_id;
  assert.equal((await waitForFile(api, storedFileId)).status, 'STORED');
});

after(async () => {
  await browser?.close();
  await svc?.close();
  await media?.close();
});

/** Nothing of the markup became elements, and nothing ran. */
async function assertNothingRan(page: Page, dialogs: string[], where: string) {
  const state = await page.evaluate(() => ({
    sentinel: (window as unknown as { __xss?: number }).__xss ?? null,
    strayImages: document.querySelectorAll('img[src="x"]').length,
    scripts: [...document.scripts].map((s) => s.type || 'classic'),
    handlers: document.querySelectorAll('[onerror], [onload]').length,
    svgs: document.querySelectorAll('svg').length,
  }));
  assert.deepEqual(
    state,
    { sentinel: null, strayImages: 0, scripts: ['importmap', 'module'], handlers: 0, svgs: 0 },
    `${where}: ${JSON.stringify(state)}`,
  );
  assert.deepEqual(dialogs, [], where);
}

test('attack: markup in metadata, error messages and file names shows as text, with the Content-Security-Policy off', async () => {
  const d = await openDashboard(browser, svc.url, { bypassCSP: true });
  try {
    await signIn(d.page, svc.key);
    await d.page.locator(`tr[data-command-id="${commandId}"] [data-status="FAILED"]`).waitFor();

    await d.page.goto(`/dashboard#/commands/${commandId}`);
    await d.page.locator('.failure').waitFor();
    assert.equal(await d.page.locator('.failure .error-message').textContent(), errorMessage);
    const metadata = await d.page.locator('table.metadata td').allTextContents();
    assert.deepEqual(metadata.sort(), [IMG, SCRIPT, SVG].sort());
    assert.ok((await d.page.locator('pre.ffmpeg-command').textContent())?.includes(IMG));
    await assertNothingRan(d.page, d.dialogs, 'command page');

    await d.page.goto('/dashboard#/files');
    const row = d.page.locator(`tr[data-file-id="${storedFileId}"]`);
    await row.waitFor();
    assert.match((await row.locator('.name').textContent()) ?? '', /^<img src=x onerror="window.__xss=4;alert\(4\)">\.mp4/);
    // Dropped files keep their name in the upload list.
    const transfer = await d.page.evaluateHandle((name) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(16)], name));
      return dt;
    }, SCRIPT);
    await d.page.dispatchEvent('.drop-zone', 'drop', { dataTransfer: transfer });
    await d.page.locator('.upload .name', { hasText: SCRIPT }).waitFor();
    await assertNothingRan(d.page, d.dialogs, 'files page');
  } finally {
    await d.close();
  }
});

test("attack: the dashboard's Content-Security-Policy stops injected markup, inline script and eval", async () => {
  const d = await openDashboard(browser, svc.url);
  try {
    await signIn(d.page, svc.key);
    // (No named functions inside: tsx would wrap them in a helper the page does not have.)
    const outcome = await d.page.evaluate(async () => {
      const violations: string[] = [];
      document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
      const attempts: [string, () => void][] = [
        // Trusted Types: no string becomes HTML or script.
        ['innerHTML', () => document.body.insertAdjacentHTML('beforeend', '<img src=x onerror="window.__xss=1">')],
        ['scriptText', () => void (document.createElement('script').textContent = 'window.__xss=2')],
        ['handler', () => document.createElement('img').setAttribute('onerror', 'window.__xss=4')],
      ];
      const results: Record<string, string> = {};
      for (const [name, attempt] of attempts) {
        try {
          attempt();
          results[name] = 'allowed';
        } catch (err) {
          results[name] = (err as Error).name;
        }
      }
      // eval, from a task of the page's own (DevTools lets its own evaluations eval).
      results.eval = await new Promise<string>((resolve) =>
        setTimeout(() => {
          try {
            (0, eval)('window.__xss=3');
            resolve('allowed');
          } catch (err) {
            resolve((err as Error).name);
          }
        }),
      );
      // A script element whose text came in as a plain text node is not run (Trusted Types, and no 'unsafe-inline').
      const script = document.createElement('script');
      script.append(document.createTextNode('window.__xss=5'));
      document.body.append(script);
      await new Promise((resolve) => setTimeout(resolve, 100));
      return { results, violations, sentinel: (window as unknown as { __xss?: number }).__xss ?? null };
    });
    assert.deepEqual(outcome.results, { innerHTML: 'TypeError', scriptText: 'TypeError', eval: 'EvalError', handler: 'TypeError' });
    assert.equal(outcome.sentinel, null);
    assert.ok(outcome.violations.length >= 5, outcome.violations.join());
    assert.deepEqual(d.dialogs, []);
  } finally {
    await d.close();
  }
});
