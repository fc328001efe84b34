import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import { S3Storage } from '../../core/storage/s3-storage.ts';
import { dashboardRoutes } from './dashboard-routes.ts';

let dir: string;
let storage: LocalStorage;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ffop-dashboard-'));
  storage = new LocalStorage({ root: dir, publicBaseUrl: 'http://files.example:8080', signingKey: 'k'.repeat(32) });
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function directives(csp: string | null): Map<string, string[]> {
  return new Map(
    (csp ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/) as [string, ...string[]])
      .map(([n, ...v]) => [n, v]),
  );
}

test('the page is served without an API key, with a policy that allows no inline script but its import map', async () => {
  const res = await dashboardRoutes(storage).request('/dashboard');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
  const page = await res.text();
  const csp = directives(res.headers.get('content-security-policy'));
  const importMap = /<script type="importmap">(.*?)<\/script>/s.exec(page)?.[1];
  assert.ok(importMap, 'the page has an import map');
  const hash = `'sha256-${createHash('sha256').update(importMap).digest('base64')}'`;
  assert.deepEqual(csp.get('script-src'), ["'self'", hash]);
  assert.deepEqual(csp.get('default-src'), ["'self'"]);
  assert.deepEqual(csp.get('style-src'), ["'self'"]);
  assert.deepEqual(csp.get('frame-ancestors'), ["'none'"]);
  assert.deepEqual(csp.get('object-src'), ["'none'"]);
  assert.deepEqual(csp.get('require-trusted-types-for'), ["'script'"]);
  // Every other script of the page is a file of its own origin.
  const scripts = [...page.matchAll(/<script([^>]*)>(.*?)<\/script>/gs)];
  assert.deepEqual(
    scripts.map((s) => [s[1].trim(), s[2].length > 0]),
    [
      ['type="importmap"', true],
      ['type="module" src="/dashboard/ui/main.js"', false],
    ],
  );
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
  // Media and part uploads may use the storage's own origin (here not the page's).
  for (const name of ['img-src', 'media-src', 'connect-src']) assert.deepEqual(csp.get(name), ["'self'", 'http://files.example:8080']);
});

test('with S3 storage, the endpoint that serves presigned downloads and part uploads is allowed too', async () => {
  const s3 = new S3Storage({ endpoint: 'https://s3.example.com', region: 'us-east-1', bucket: 'media', accessKey: 'a', secretKey: 's' });
  const res = await dashboardRoutes(s3).request('/dashboard');
  const csp = directives(res.headers.get('content-security-policy'));
  // Public files are served under the bucket's base here (the service passes its own /storage/ base).
  assert.deepEqual(csp.get('media-src'), ["'self'", 'https://s3.example.com']);
  assert.deepEqual(csp.get('connect-src'), ["'self'", 'https://s3.example.com']);
});

test("the dashboard's modules, preact, htm and the stylesheet are served from this machine", async () => {
  const app = dashboardRoutes(storage);
  const page = await (await app.request('/dashboard')).text();
  const importMap = JSON.parse(/<script type="importmap">(.*?)<\/script>/s.exec(page)![1]);
  const urls = [
    '/dashboard/ui/main.js',
    '/dashboard/ui/submit-page.js',
    '/dashboard/ui/app.ts',
    '/dashboard/dashboard.css',
    ...Object.values<string>(importMap.imports),
  ];
  for (const url of urls) {
    const res = await app.request(url);
    assert.equal(res.status, 200, url);
    const body = await res.text();
    assert.ok(body.length > 100, url);
    assert.doesNotMatch(body, /sourceMappingURL/, url);
    if (url.endsWith('.css')) continue;
    assert.equal(res.headers.get('content-type'), 'text/javascript; charset=utf-8', url);
    // Plain JavaScript: the types are gone, and imports are relative or named in the import map.
    assert.doesNotMatch(body, /\binterface\s+\w+\s*\{/, url);
    for (const [, specifier] of body.matchAll(/\bfrom\s*["']([^"']+)["']/g)) {
      assert.ok(specifier.startsWith('./') || Object.hasOwn(importMap.imports, specifier), `${url} imports ${specifier}`);
    }
    // Revalidation answers 304.
    const again = await app.request(url, { headers: { 'if-none-match': res.headers.get('etag')! } });
    assert.equal(again.status, 304, url);
  }
});

test('attack: nothing but the known files is served from the dashboard paths', async () => {
  const app = dashboardRoutes(storage);
  for (const url of [
    '/dashboard/ui/file-name.test.ts',
    '/dashboard/ui/..%2Fpage.ts',
    '/dashboard/ui/%2e%2e%2fassets.ts',
    '/dashboard/ui/main.js.map',
    '/dashboard/ui/Main.js',
    '/dashboard/vendor/preact-compat.js',
    '/dashboard/vendor/constructor.js',
    '/dashboard/vendor/..%2F..%2Fpackage.json',
    '/dashboard/static/dashboard.css',
  ]) {
    const res = await app.request(url);
    assert.equal(res.status, 404, url);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff', url);
  }
});
