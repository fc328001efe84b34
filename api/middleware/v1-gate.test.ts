import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import { AuthFailureLimit } from './auth-failure-limit.ts';
import type { AppEnv } from './auth.ts';
import { RateLimit } from './rate-limit.ts';
import { testCaller } from '../testing/test-caller.ts';
import { v1Gate } from './v1-gate.ts';

/** The gate over an accounts double with one good key per rate, and a route that echoes its caller's key id. */
function gatedApp(o: { clock: () => number; bodyLimitHit?: () => void; databaseUp?: () => boolean }) {
  const keys: Record<string, ReturnType<typeof testCaller>> = { slow: testCaller(2, 'slow'), fast: testCaller(600, 'fast') };
  const app = new Hono<AppEnv>();
  app.use(
    '/v1/*',
    v1Gate({
      limitBody: (c, next) => {
        o.bodyLimitHit?.();
        return next();
      },
      authFailures: new AuthFailureLimit({ maxFailures: 30, windowSeconds: 60, globalMaxFailures: 1000 }),
      accounts: { authenticate: async (key) => keys[key] ?? null },
      rateLimit: new RateLimit(),
      allowOf: (path) => (path.startsWith('/v1/things') ? 'GET, HEAD, OPTIONS' : null),
      clock: o.clock,
      databaseUp: o.databaseUp,
    }),
  );
  app.get('/v1/things/:id', (c) => c.json({ key: c.get('caller').keyId }));
  return (path: string, init: RequestInit & { key?: string } = {}) =>
    app.request(path, { ...init, headers: init.key ? { 'x-api-key': init.key } : {} });
}

test('a valid key reaches the route with its caller; a missing or unknown key gets 401 and no route', async () => {
  const request = gatedApp({ clock: () => 0 });
  const ok = await request('/v1/things/1', { key: ' fast ' });
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), { key: 'fast' });
  for (const key of [undefined, 'nope']) {
    const refused = await request('/v1/things/1', { key });
    assert.equal(refused.status, 401);
    assert.match((await refused.json()).detail, /Invalid authorization key/);
  }
});

test('the rate limit counts per key, answers 429 with Retry-After and refills with time', async () => {
  let now = 0;
  const request = gatedApp({ clock: () => now });
  for (let i = 0; i < 2; i++) assert.equal((await request('/v1/things/1', { key: 'slow' })).status, 200);
  const limited = await request('/v1/things/1', { key: 'slow' });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '30');
  assert.match((await limited.json()).detail, /Rate limit exceeded: 2 requests per minute/);
  assert.equal((await request('/v1/things/1', { key: 'fast' })).status, 200, 'another key has its own bucket');
  now += 30_000;
  assert.equal((await request('/v1/things/1', { key: 'slow' })).status, 200);
  assert.equal((await request('/v1/things/1', { key: 'slow' })).status, 429);
});

test('methods are checked after the key: 401 without one, 405 or 204 with Allow with one', async () => {
  const request = gatedApp({ clock: () => 0 });
  assert.equal((await request('/v1/things/1', { method: 'DELETE' })).status, 401);
  const refused = await request('/v1/things/1', { method: 'DELETE', key: 'fast' });
  assert.equal(refused.status, 405);
  assert.equal(refused.headers.get('allow'), 'GET, HEAD, OPTIONS');
  const options = await request('/v1/things/1', { method: 'OPTIONS', key: 'fast' });
  assert.equal(options.status, 204);
  assert.equal(options.headers.get('allow'), 'GET, HEAD, OPTIONS');
});

test('only requests that may carry a body go through the body limit', async () => {
  let hits = 0;
  const request = gatedApp({ clock: () => 0, bodyLimitHit: () => (hits += 1) });
  await request('/v1/things/1', { key: 'fast' });
  await request('/v1/things/1', { method: 'HEAD', key: 'fast' });
  assert.equal(hits, 0);
  await request('/v1/things/1', { method: 'POST', key: 'fast', body: '{}' });
  assert.equal(hits, 1);
});

test('a refusal under the body limit is the answer (not lost inside its middleware)', async () => {
  const request = gatedApp({ clock: () => 0 });
  assert.equal((await request('/v1/things/1', { method: 'POST', body: '{}' })).status, 401);
  assert.equal((await request('/v1/things/1', { method: 'POST', key: 'fast', body: '{}' })).status, 405);
});

test('while the database cannot be reached every request gets 503 with Retry-After at once, before its key is looked up', async () => {
  let up = false;
  let bodyChecks = 0;
  const request = gatedApp({ clock: () => 0, databaseUp: () => up, bodyLimitHit: () => bodyChecks++ });
  for (const [path, init] of [
    ['/v1/things/1', { key: 'fast' }],
    ['/v1/things/1', { key: 'nope' }],
    ['/v1/things/1', { key: 'fast', method: 'POST', body: '{}' }],
  ] as const) {
    const res = await request(path, init);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.match((await res.json()).detail, /cannot reach its database/);
  }
  assert.equal(bodyChecks, 0);
  up = true;
  assert.equal((await request('/v1/things/1', { key: 'fast' })).status, 200);
});
