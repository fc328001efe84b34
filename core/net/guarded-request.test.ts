import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { createAddressPolicy } from './address-policy.ts';
import type { GuardErrors } from './guarded-connection.ts';
import { guardedRequest } from './guarded-request.ts';

class Refused extends Error {}
class Unreachable extends Error {}
const errors: GuardErrors = { refused: (reason) => new Refused(reason), unreachable: (message) => new Unreachable(message) };

/** A loopback server that answers each request with what it received. */
async function echoServer(t: TestContext, delayMs = 0): Promise<{ url: string; port: number; hits: () => number }> {
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      setTimeout(() => {
        res.end(JSON.stringify({ method: req.method, agent: req.headers['user-agent'], body: Buffer.concat(chunks).toString() }));
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/echo?q=1`, port, hits: () => hits };
}

const options = (url: string, allow: string[]) => ({
  url: new URL(url),
  headers: {},
  policy: createAddressPolicy(allow),
  connectTimeoutMs: 2000,
  signal: AbortSignal.timeout(5000),
  label: `request to ${url}`,
  errors,
});

async function readAll(response: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of response) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString());
}

test('an allowed address gets the request, its body and the service user agent', async (t) => {
  const server = await echoServer(t);
  const { response } = await guardedRequest({ ...options(server.url, [`127.0.0.1:${server.port}`]), method: 'POST', body: 'hi' });
  assert.equal(response.statusCode, 200);
  assert.deepEqual(await readAll(response), { method: 'POST', agent: 'ffmpeg-operator', body: 'hi' });
});

test('a refused IP literal or a name that resolves to a refused address never reaches the server', async (t) => {
  const server = await echoServer(t);
  await assert.rejects(guardedRequest({ ...options(server.url, []), method: 'GET' }), (err) => {
    assert.ok(err instanceof Refused);
    assert.match(err.message, /127\.0\.0\.1 is not a public address/);
    return true;
  });
  const byName = `http://localhost:${server.port}/`;
  await assert.rejects(guardedRequest({ ...options(byName, []), method: 'GET' }), Refused);
  assert.equal(server.hits(), 0);
});

test('without a policy (a URL the service minted) there is no address check', async (t) => {
  const server = await echoServer(t);
  const { response } = await guardedRequest({ ...options(server.url, []), policy: null, method: 'GET' });
  assert.deepEqual(await readAll(response), { method: 'GET', agent: 'ffmpeg-operator', body: '' });
});

test('an answer that does not come within the idle time fails as unreachable, naming the request', async (t) => {
  const server = await echoServer(t, 2000);
  const url = server.url;
  await assert.rejects(
    guardedRequest({ ...options(url, [`127.0.0.1:${server.port}`]), method: 'GET', idleTimeoutMs: 200 }),
    (err) => err instanceof Unreachable && err.message === `request to ${url} timed out: no data for 200 ms`,
  );
});
