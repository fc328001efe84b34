import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import { AuthFailureLimit, clientKey } from './auth-failure-limit.ts';
import type { AppEnv } from './auth.ts';
import { RateLimit } from './rate-limit.ts';
import { testCaller } from './testing/test-caller.ts';
import { v1Gate } from './v1-gate.ts';

/** The API's gate with this limit, over an accounts double that counts its lookups; `env` carries the socket like @hono/node-server's. */
function appWith(clock: () => number, maxTracked?: number, trustedProxies?: string[]) {
  let lookups = 0;
  const app = new Hono<AppEnv>();
  const accountsCountingLookups = {
    authenticate: async (key: string) => {
      lookups += 1;
      return key === 'good' ? testCaller(1_000_000) : null;
    },
  };
  app.use(
    '/v1/*',
    v1Gate({
      limitBody: (_c, next) => next(),
      authFailures: new AuthFailureLimit({ maxFailures: 3, windowSeconds: 60, maxTracked, trustedProxies }),
      accounts: accountsCountingLookups,
      rateLimit: new RateLimit(),
      allowOf: () => 'GET, HEAD, OPTIONS',
      clock,
    }),
  );
  app.get('/v1/x', (c) => c.json({ ok: true }));
  const from = (address: string, key: string, forwardedFor?: string) =>
    app.request(
      '/v1/x',
      { headers: { 'x-api-key': key, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) } },
      { incoming: { socket: { remoteAddress: address } } },
    );
  return { from, lookups: () => lookups };
}

test('attack: after 3 bad keys an address gets 429 with Retry-After, without a key lookup, until the window ends', async () => {
  let now = 1_000_000;
  const { from, lookups } = appWith(() => now);
  for (let i = 0; i < 3; i++) assert.equal((await from('203.0.113.7', `guess-${i}`)).status, 401);
  assert.equal(lookups(), 3);

  const limited = await from('203.0.113.7', 'guess-4');
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '60');
  assert.match((await limited.json()).detail, /Too many failed API key attempts/);
  // Even a valid key waits: nothing is looked up for a blocked address.
  assert.equal((await from('203.0.113.7', 'good')).status, 429);
  assert.equal(lookups(), 3);

  // Other addresses are not affected; the IPv4-mapped spelling is the same client.
  assert.equal((await from('198.51.100.1', 'good')).status, 200);
  assert.equal((await from('::ffff:203.0.113.7', 'good')).status, 429);

  now += 45_000;
  assert.equal((await from('203.0.113.7', 'good')).headers.get('retry-after'), '15');
  now += 15_000;
  assert.equal((await from('203.0.113.7', 'good')).status, 200);
  assert.equal((await from('203.0.113.7', 'guess-5')).status, 401, 'a new window starts');
});

test('successes do not wipe the count; an IPv6 /64 counts as one client', async () => {
  const { from } = appWith(() => 0);
  assert.equal((await from('2001:db8:1:2::10', 'bad')).status, 401);
  assert.equal((await from('2001:db8:1:2::10', 'good')).status, 200);
  assert.equal((await from('2001:db8:1:2:ffff::1', 'bad')).status, 401);
  assert.equal((await from('2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd', 'bad')).status, 401);
  assert.equal((await from('2001:db8:1:2::99', 'good')).status, 429);
  assert.equal((await from('2001:db8:1:3::10', 'good')).status, 200);
});

test('memory stays bounded under failures from many addresses', async () => {
  const { from } = appWith(() => 0, 100);
  for (let i = 0; i < 300; i++) await from(`10.0.${i >> 8}.${i & 255}`, 'bad');
  // The newest addresses are still tracked; the oldest were let go (a kept count would block here).
  for (let i = 0; i < 2; i++) await from('10.0.1.43', 'bad');
  assert.equal((await from('10.0.1.43', 'good')).status, 429);
  for (let i = 0; i < 2; i++) await from('10.0.0.0', 'bad');
  assert.equal((await from('10.0.0.0', 'good')).status, 200);
});

test('client keys', () => {
  assert.equal(clientKey('192.0.2.1'), '192.0.2.1');
  assert.equal(clientKey('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(clientKey('::1'), '0:0:0:0::/64');
  assert.equal(clientKey('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
  assert.equal(clientKey(undefined), 'unknown');
});

test('behind a trusted proxy each client counts on its own; a forged X-Forwarded-For does not help', async () => {
  const proxy = '10.0.0.5';
  const { from } = appWith(() => 0, undefined, [proxy]);
  // The attacker prepends a fake address each time; the proxy appends the real one.
  for (let i = 0; i < 3; i++) assert.equal((await from(proxy, 'bad', `192.0.2.${i}, 203.0.113.7`)).status, 401);
  assert.equal((await from(proxy, 'good', '192.0.2.99, 203.0.113.7')).status, 429);
  // Another client behind the same proxy is not blocked.
  assert.equal((await from(proxy, 'good', '198.51.100.20')).status, 200);
  // From an untrusted peer the header is ignored: the peer itself is the client.
  const direct = appWith(() => 0, undefined, [proxy]);
  for (let i = 0; i < 3; i++) await direct.from('203.0.113.50', 'bad', `192.0.2.${i}`);
  assert.equal((await direct.from('203.0.113.50', 'good', '198.51.100.21')).status, 429);
});
