import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import { AuthFailureLimit, clientKey } from './auth-failure-limit.ts';
import type { AppEnv } from './auth.ts';
import { RateLimit } from './rate-limit.ts';
import { testCaller } from '../testing/test-caller.ts';
import { v1Gate } from './v1-gate.ts';

/**
 * The API's gate with this limit (3 failures per address, 5 from everyone, per 60 s), over an accounts
 * double that counts its lookups and knows the keys in `validKeys`; `env` carries the socket like
 * @hono/node-server's.
 */
function appWith(clock: () => number, maxTracked?: number, trustedProxies?: string[]) {
  let lookups = 0;
  const validKeys = new Set(['good', 'other-good']);
  const app = new Hono<AppEnv>();
  const accountsCountingLookups = {
    authenticate: async (key: string) => {
      lookups += 1;
      return validKeys.has(key) ? testCaller(1_000_000) : null;
    },
  };
  app.use(
    '/v1/*',
    v1Gate({
      limitBody: (_c, next) => next(),
      authFailures: new AuthFailureLimit({ maxFailures: 3, windowSeconds: 60, globalMaxFailures: 5, maxTracked, trustedProxies }),
      accounts: accountsCountingLookups,
      rateLimit: new RateLimit(),
      allowOf: () => 'GET, HEAD, OPTIONS',
      clock,
    }),
  );
  app.get('/v1/x', (c) => c.json({ ok: true }));
  const from = (address: string, key: string | undefined, forwardedFor?: string) =>
    app.request(
      '/v1/x',
      { headers: { ...(key ? { 'x-api-key': key } : {}), ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) } },
      { incoming: { socket: { remoteAddress: address } } },
    );
  return { from, lookups: () => lookups, validKeys };
}

test('attack: after 3 bad keys an address gets 429 with Retry-After, without a key lookup, until the window ends', async () => {
  let now = 1_000_000;
  const { from, lookups } = appWith(() => now);
  for (let i = 0; i < 3; i++) assert.equal((await from('203.0.113.7', `guess-${i}`)).status, 401);
  assert.equal(lookups(), 3);

  const limited = await from('203.0.113.7', 'guess-4');
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '60');
  assert.match((await limited.json()).detail, /Too many failed API key attempts from your address \(3 in 60 s\); retry after 60 s/);
  assert.equal((await from('203.0.113.7', undefined)).status, 429, 'no key at all waits too');
  // A valid key this process has never seen authenticate cannot prove itself without a lookup: it waits.
  assert.equal((await from('203.0.113.7', 'good')).status, 429);
  assert.equal(lookups(), 3);

  // Other addresses are not affected; the IPv4-mapped spelling is the same client.
  assert.equal((await from('198.51.100.1', 'good')).status, 200);
  assert.equal((await from('::ffff:203.0.113.7', 'guess-5')).status, 429);

  now += 45_000;
  assert.equal((await from('203.0.113.7', 'guess-6')).headers.get('retry-after'), '15');
  now += 15_000;
  assert.equal((await from('203.0.113.7', 'guess-7')).status, 401, 'a new window starts');
});

test('attack: guesses from an address do not lock out a valid key that authenticated before, from that address or another', async () => {
  let now = 0;
  const { from, lookups } = appWith(() => now);
  assert.equal((await from('127.0.0.1', 'good')).status, 200);
  for (let i = 0; i < 3; i++) assert.equal((await from('127.0.0.1', `guess-${i}`)).status, 401);
  const before = lookups();
  for (let i = 0; i < 100; i++) {
    assert.equal((await from('127.0.0.1', `guess-${i}`)).status, 429);
    assert.equal((await from('127.0.0.1', 'good')).status, 200);
    now += 1_000; // the attack goes on across windows
    if (i % 60 === 59) for (let j = 0; j < 3; j++) await from('127.0.0.1', `guess-${i}-${j}`);
  }
  // Each valid request was looked up (revocation still counts); no refused guess was.
  assert.equal(lookups() - before, 100 + 3);
  // Only the key is exempt, not the address: a key is remembered whatever the address it came from.
  assert.equal((await from('192.0.2.8', 'good')).status, 200);
});

test('attack: guesses sent at once do not overshoot the limit (lookups under way count)', async () => {
  const { from, lookups } = appWith(() => 0);
  const answers = await Promise.all(Array.from({ length: 10 }, async (_, i) => from('203.0.113.9', `guess-${i}`)));
  assert.equal(lookups(), 3);
  assert.deepEqual(answers.map((a) => a.status).sort(), [401, 401, 401, ...Array<number>(7).fill(429)]);
  // Also from many addresses at once: the global budget of 5 holds.
  const spread = await Promise.all(Array.from({ length: 10 }, async (_, i) => from(`198.51.100.${i}`, `guess-${i}`)));
  assert.equal(lookups(), 5);
  assert.equal(spread.filter((a) => a.status === 401).length, 2);
});

test('a known key that is revoked fails, counts as a failure and waits like a guess from then on', async () => {
  const { from, validKeys, lookups } = appWith(() => 0);
  assert.equal((await from('127.0.0.1', 'good')).status, 200);
  for (let i = 0; i < 3; i++) await from('127.0.0.1', `guess-${i}`);
  validKeys.delete('good');
  assert.equal((await from('127.0.0.1', 'good')).status, 401);
  const after = lookups();
  assert.equal((await from('127.0.0.1', 'good')).status, 429);
  assert.equal(lookups(), after, 'not looked up again');
});

test('attack: failures from many addresses spend a global budget; then only unknown keys wait, known keys work', async () => {
  let now = 0;
  const { from, lookups } = appWith(() => now);
  assert.equal((await from('192.0.2.1', 'good')).status, 200);
  // A botnet: every address stays under its own limit of 3.
  for (let i = 0; i < 5; i++) assert.equal((await from(`198.51.100.${i}`, `guess-${i}`)).status, 401);
  now += 10_000;
  const limited = await from('203.0.113.99', 'guess-new');
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '50');
  assert.match((await limited.json()).detail, /Too many failed API key attempts on this service from all addresses \(5 in 60 s\)/);
  const before = lookups();
  assert.equal((await from('203.0.113.99', 'other-good')).status, 429, 'a key never seen waits too');
  assert.equal(lookups(), before);
  // A key that authenticated before goes on working, from any address.
  assert.equal((await from('203.0.113.99', 'good')).status, 200);
  assert.equal((await from('192.0.2.1', 'good')).status, 200);
  now += 50_000;
  assert.equal((await from('203.0.113.99', 'other-good')).status, 200, 'the budget is back with the next window');
});

test('successes do not wipe the count; an IPv6 /64 counts as one client', async () => {
  const { from } = appWith(() => 0);
  assert.equal((await from('2001:db8:1:2::10', 'bad')).status, 401);
  assert.equal((await from('2001:db8:1:2::10', 'good')).status, 200);
  assert.equal((await from('2001:db8:1:2:ffff::1', 'bad')).status, 401);
  assert.equal((await from('2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd', 'bad')).status, 401);
  assert.equal((await from('2001:db8:1:2::99', 'bad')).status, 429);
  assert.equal((await from('2001:db8:1:2::99', 'other-good')).status, 429);
  assert.equal((await from('2001:db8:1:3::10', 'other-good')).status, 200);
});

test('memory stays bounded under failures from many addresses', async () => {
  const limit = new AuthFailureLimit({ maxFailures: 3, windowSeconds: 60, globalMaxFailures: 1e9, maxTracked: 100 });
  const app = new Hono().get('/:client', (c) => limit.refusal(c, c.req.param('client'), 0) ?? c.text('ok'));
  const refused = (client: string) => app.request(`/${client}`);
  for (let i = 0; i < 300; i++) limit.failed(`10.0.${i >> 8}.${i & 255}`, 0);
  // The newest addresses are still tracked; the oldest were let go (a kept count would block here).
  for (let i = 0; i < 2; i++) limit.failed('10.0.1.43', 0);
  assert.equal((await refused('10.0.1.43')).status, 429);
  for (let i = 0; i < 2; i++) limit.failed('10.0.0.0', 0);
  assert.equal((await refused('10.0.0.0')).status, 200);
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
  assert.equal((await from(proxy, 'bad', '192.0.2.99, 203.0.113.7')).status, 429);
  // Another client behind the same proxy is not blocked.
  assert.equal((await from(proxy, 'bad', '198.51.100.20')).status, 401);
  // From an untrusted peer the header is ignored: the peer itself is the client.
  const direct = appWith(() => 0, undefined, [proxy]);
  for (let i = 0; i < 3; i++) await direct.from('203.0.113.50', 'bad', `192.0.2.${i}`);
  assert.equal((await direct.from('203.0.113.50', 'bad', '198.51.100.21')).status, 429);
});
