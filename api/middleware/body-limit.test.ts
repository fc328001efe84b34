import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { limitBody } from './body-limit.ts';

const LIMIT = 1000;

/** A real server with the limit in front of a route that answers the size of the body it read. */
async function limitedServer() {
  const app = new Hono();
  let routeCalls = 0;
  app.use('*', limitBody(LIMIT));
  app.post('/echo', async (c) => {
    routeCalls++;
    return c.json({ read: (await c.req.arrayBuffer()).byteLength });
  });
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as AddressInfo).port;
  return {
    routeCalls: () => routeCalls,
    /** POSTs `size` bytes, with a Content-Length or chunked (in chunks of 100 bytes). */
    post(size: number, how: 'content-length' | 'chunked') {
      return new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
        const headers: Record<string, string> = how === 'content-length' ? { 'content-length': String(size) } : {};
        const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/echo', headers }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
        });
        req.on('error', reject);
        for (let sent = 0; sent < size; sent += 100) req.write('x'.repeat(Math.min(100, size - sent)));
        req.end();
      });
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

/** Runs `body` against a fresh limited server, closed afterwards. */
async function withLimitedServer(body: (s: Awaited<ReturnType<typeof limitedServer>>) => Promise<void>): Promise<void> {
  const s = await limitedServer();
  try {
    await body(s);
  } finally {
    await s.close();
  }
}

test('a body up to the limit reaches the route whole, with a Content-Length or chunked', () =>
  withLimitedServer(async (s) => {
    for (const how of ['content-length', 'chunked'] as const) {
      for (const size of [0, 1, LIMIT]) {
        const res = await s.post(size, how);
        assert.deepEqual([res.status, JSON.parse(res.body)], [200, { read: size }], `${size} bytes, ${how}`);
      }
    }
  }));

test('a Content-Length over the limit is refused from the header: 413, connection closed, route not run', () =>
  withLimitedServer(async (s) => {
    const res = await s.post(LIMIT + 1, 'content-length');
    assert.equal(res.status, 413);
    assert.equal(res.connection, 'close');
    assert.deepEqual(JSON.parse(res.body), { detail: `Request body too large (limit ${LIMIT} bytes)` });
    assert.equal(s.routeCalls(), 0);
  }));

test('a chunked body is counted as it is read: over the limit it is a 413', () =>
  withLimitedServer(async (s) => {
    const res = await s.post(LIMIT + 1, 'chunked');
    assert.equal(res.status, 413);
    assert.match(JSON.parse(res.body).detail, /too large \(limit 1000 bytes\)/);
  }));
