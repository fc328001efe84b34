import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadWithRetries } from './download-retries.ts';
import { DownloadError } from './download.ts';

/** A server that answers `failures` requests with `status` (or drops the connection), then serves "media". */
async function flakyServer(failures: number, status: number | 'reset') {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    if (requests <= failures) {
      if (status === 'reset') return void req.socket.destroy();
      return void res.writeHead(status).end('no');
    }
    res.writeHead(200, { 'content-length': 5 }).end('media');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/clip.mp4`;
  return { url, requests: () => requests, close: () => new Promise((r) => server.close(r)) };
}

async function inTempDir<T>(run: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-retries-'));
  try {
    return await run(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const opts = { maxBytes: 1000, timeoutMs: 10_000, policy: null };
const quick = [10, 10];

test('a 5xx twice, then the file: downloaded on the third try', async () => {
  const server = await flakyServer(2, 503);
  try {
    await inTempDir(async (dir) => {
      const result = await downloadWithRetries(server.url, join(dir, 'in.mp4'), opts, quick);
      assert.equal(result.bytes, 5);
      assert.equal(await readFile(join(dir, 'in.mp4'), 'utf8'), 'media');
      assert.equal(server.requests(), 3);
    });
  } finally {
    await server.close();
  }
});

test('a dropped connection is tried again', async () => {
  const server = await flakyServer(1, 'reset');
  try {
    await inTempDir(async (dir) => {
      assert.equal((await downloadWithRetries(server.url, join(dir, 'in.mp4'), opts, quick)).bytes, 5);
      assert.equal(server.requests(), 2);
    });
  } finally {
    await server.close();
  }
});

test('a 5xx every time: fails after three tries, and says so', async () => {
  const server = await flakyServer(10, 502);
  try {
    await inTempDir(async (dir) => {
      const err = await downloadWithRetries(server.url, join(dir, 'in.mp4'), opts, quick).catch((e: unknown) => e);
      assert.ok(err instanceof DownloadError);
      assert.equal(err.errorStatus, 'UNREACHABLE_INPUT_FILE');
      assert.match(err.message, /answered HTTP 502 \(tried 3 times\)/);
      assert.equal(server.requests(), 3);
    });
  } finally {
    await server.close();
  }
});

test('a 404 is final: one request, no retry', async () => {
  const server = await flakyServer(10, 404);
  try {
    await inTempDir(async (dir) => {
      const err = await downloadWithRetries(server.url, join(dir, 'in.mp4'), opts, quick).catch((e: unknown) => e);
      assert.ok(err instanceof DownloadError);
      assert.match(err.message, /answered HTTP 404$/);
      assert.equal(server.requests(), 1);
    });
  } finally {
    await server.close();
  }
});

test('a file too large is final', async () => {
  const server = await flakyServer(0, 503);
  try {
    await inTempDir(async (dir) => {
      const err = await downloadWithRetries(server.url, join(dir, 'in.mp4'), { ...opts, maxBytes: 2 }, quick).catch((e: unknown) => e);
      assert.ok(err instanceof DownloadError);
      assert.equal(err.errorStatus, 'INPUT_FILE_TOO_LARGE');
      assert.equal(server.requests(), 1);
    });
  } finally {
    await server.close();
  }
});

test('a cancelled download stops waiting to try again', async () => {
  const server = await flakyServer(10, 503);
  try {
    await inTempDir(async (dir) => {
      const stop = new AbortController();
      setTimeout(() => stop.abort(new Error('cancelled')), 50);
      const started = Date.now();
      await assert.rejects(downloadWithRetries(server.url, join(dir, 'in.mp4'), { ...opts, signal: stop.signal }, [60_000, 60_000]));
      assert.ok(Date.now() - started < 30_000, 'it did not wait out the retry delay');
      assert.equal(server.requests(), 1);
    });
  } finally {
    await server.close();
  }
});

test('a file fetched in ranges whose parts failed is tried again over one connection', async () => {
  const file = Buffer.alloc(4096, 7);
  const ranges: string[] = [];
  // Takes ranges, but drops every ranged GET: the first try fails, the next one must not ask for ranges.
  const server: Server = createServer((req, res) => {
    if (req.headers.range) {
      ranges.push(req.headers.range);
      return void req.socket.destroy();
    }
    res.writeHead(200, { 'content-length': file.length, 'accept-ranges': 'bytes', etag: '"v1"' }).end(file);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/clip.mp4`;
  try {
    await inTempDir(async (dir) => {
      const result = await downloadWithRetries(url, join(dir, 'in.mp4'), { ...opts, maxBytes: 10_000, rangedMinBytes: 1024 }, quick);
      assert.equal(result.bytes, file.length);
      assert.deepEqual(await readFile(join(dir, 'in.mp4')), file);
      assert.equal(ranges.length, 3, 'ranges on the first try only');
    });
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});
