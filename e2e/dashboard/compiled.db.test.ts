// The dashboard as `npm start` serves it: from the compiled service in dist/ (its modules compiled by
// scripts/build.sh, its stylesheet copied there, preact and htm found in node_modules from dist/).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startServiceProcess, type ServiceProcess } from '../harness.ts';
import { launchBrowser, openDashboard, signIn } from './dashboard-fixture.ts';

let service: ServiceProcess;
let browser: Browser;

before(async () => {
  service = await startServiceProcess({ compiled: true });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await service?.close();
});

test('the compiled service serves the dashboard: every file loads and signing in shows the commands list', async () => {
  const d = await openDashboard(browser, service.url);
  try {
    await signIn(d.page, service.key);
    await d.page.locator('h1', { hasText: 'Commands' }).waitFor();
    await d.page.locator('text=No commands yet.').waitFor();
    const files = d.answers.filter((a) => !a.includes(' /v1/'));
    for (const path of [
      '/dashboard',
      '/dashboard/dashboard.css',
      '/dashboard/ui/main.js',
      '/dashboard/ui/app.js',
      '/dashboard/vendor/preact.js',
    ]) {
      assert.ok(files.includes(`200 ${path}`), `${path} in ${files.join(', ')}`);
    }
    assert.deepEqual(
      files.filter((a) => !a.startsWith('200 ')),
      [],
    );
    // The stylesheet applies (the header is laid out by it).
    assert.equal(await d.page.locator('header.top').evaluate((el) => getComputedStyle(el).display), 'flex');
    assert.deepEqual(d.problems, []);
  } finally {
    await d.close();
  }
});
