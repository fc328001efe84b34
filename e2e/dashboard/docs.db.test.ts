// /docs (Swagger UI) is served on the dashboard's origin under the same frame and content rules, with
// a policy of its own that Swagger UI works under: in a real browser that enforces it, the page renders
// every operation, opens one and runs "Try it out" against the API, and nothing is refused.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startService, type ServiceFixture } from '../harness.ts';
import { launchBrowser } from './dashboard-fixture.ts';

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

test('/docs, its script and its assets carry the CSP, frame and sniffing rules', async () => {
  for (const path of ['/docs', '/docs/init.js', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css']) {
    const res = await fetch(svc.url + path);
    assert.equal(res.status, 200, path);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /frame-ancestors 'none'/, path);
    assert.match(csp, /script-src 'self'(;|$)/, `${path}: scripts of our own origin only, nothing inline or eval'd`);
    assert.match(csp, /object-src 'none'/, path);
    assert.equal(res.headers.get('x-frame-options'), 'DENY', path);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer', path);
    await res.arrayBuffer();
  }
});

test('Swagger UI works under its policy in a real browser; an inline script would not run', async () => {
  const context = await browser.newContext({ baseURL: svc.url });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  try {
    await page.goto('/docs');
    await page.locator('.opblock-summary-path', { hasText: '/v1/commands/{command_id}' }).first().waitFor();
    assert.ok((await page.locator('.opblock').count()) >= 10, 'every operation is listed');
    // Open GET /v1/commands and try it out (with no key: the API answers 401, shown in the page).
    const list = page.locator('.opblock-get', { has: page.locator('.opblock-summary-path[data-path="/v1/commands"]') });
    await list.locator('.opblock-summary').click();
    await list.locator('button.try-out__btn').click();
    await list.locator('button.execute').click();
    await list.locator('.live-responses-table .response-col_status', { hasText: '401' }).waitFor();
    // The policy is enforced: a script injected inline is refused.
    await page.evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__inlineRan = true';
      document.body.append(s);
    });
    assert.equal(await page.evaluate(() => (window as unknown as { __inlineRan?: boolean }).__inlineRan), undefined);
    const refusedInline = problems.filter((p) => /Content Security Policy/.test(p) && /inline script/i.test(p));
    assert.equal(refusedInline.length, 1, problems.join('\n'));
    const others = problems.filter((p) => !refusedInline.includes(p) && !/401 \(Unauthorized\)/.test(p));
    assert.deepEqual(others, [], 'nothing else was refused or failed');
  } finally {
    await context.close();
  }
});
