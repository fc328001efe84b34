import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { fstatSync } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { guardedRequest } from './guarded-request.ts';
import { writeBodySync } from './sync-body-writes.ts';

async function tempFile(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sync-body-writes-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return path.join(dir, 'in.bin');
}

async function listen(t: TestContext, server: net.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/in.bin`;
}

function get(url: string) {
  return guardedRequest({
    method: 'GET',
    url: new URL(url),
    headers: {},
    policy: null,
    connectTimeoutMs: 5000,
    signal: AbortSignal.timeout(20_000),
    label: `GET ${url}`,
    errors: { refused: (reason) => new Error(reason), unreachable: (message) => new Error(message) },
  });
}

/** Serves `body` with a Content-Length, however `send` writes it to the socket. */
function serve(body: Buffer, send: (socket: net.Socket, head: Buffer) => Promise<void>): net.Server {
  return net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => void send(socket, Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`)));
  });
}

test('each chunk is in the file before its data event returns, and the whole body is, byte for byte', async (t) => {
  const body = randomBytes(4 << 20);
  const url = await listen(
    t,
    serve(body, async (socket, head) => {
      socket.write(head);
      for (let at = 0; at < body.length; at += 256 << 10) {
        if (!socket.write(body.subarray(at, at + (256 << 10)))) await once(socket, 'drain');
      }
      socket.end();
    }),
  );
  const { response } = await get(url);
  const dest = await tempFile(t);
  const file = await open(dest, 'wx');
  let seen = 0;
  let chunks = 0;
  const behind: string[] = [];
  try {
    const writing = writeBodySync(response, { fd: file.fd, position: 0, limit: body.length, atLimit: 'fail' });
    // Listens after writeBodySync: runs once its listener has returned.
    response.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      chunks++;
      const size = fstatSync(file.fd).size;
      if (size !== seen) behind.push(`${size} of ${seen}`);
    });
    assert.equal(await writing, body.length);
  } finally {
    await file.close();
  }
  assert.deepEqual(behind, [], 'the file held every chunk by the time its event returned');
  assert.ok(chunks > 10, `many chunks (${chunks})`);
  assert.ok((await readFile(dest)).equals(body), 'the file is the body, byte for byte');
});

test("'stop' writes the first bytes at the position and resolves, reading no further into the file", async (t) => {
  const body = randomBytes(300_000);
  const url = await listen(
    t,
    serve(body, async (socket, head) => {
      socket.end(Buffer.concat([head, body]));
    }),
  );
  const { response } = await get(url);
  const dest = await tempFile(t);
  const file = await open(dest, 'wx');
  try {
    await file.write(Buffer.alloc(10, 7));
    const written = await writeBodySync(response, { fd: file.fd, position: 10, limit: 100_000, atLimit: 'stop' });
    assert.equal(written, 100_000);
  } finally {
    response.destroy();
    await file.close();
  }
  const stored = await readFile(dest);
  assert.equal(stored.length, 100_010);
  assert.ok(stored.subarray(10).equals(body.subarray(0, 100_000)));
  assert.ok(stored.subarray(0, 10).equals(Buffer.alloc(10, 7)));
});

test("'fail' rejects with tooMuch() past the limit; a failed write and a cancel reject too, and stop the body", async (t) => {
  const body = randomBytes(200_000);
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-length': body.length });
    res.write(body.subarray(0, 100_000));
    setTimeout(() => res.end(body.subarray(100_000)), 200).unref();
  });
  const url = await listen(t, server);
  const dest = await tempFile(t);
  const file = await open(dest, 'wx');
  t.after(() => file.close());

  const over = await get(url);
  const tooMuch = new Error('too much');
  await assert.rejects(
    writeBodySync(over.response, { fd: file.fd, position: 0, limit: 1000, atLimit: 'fail', tooMuch: () => tooMuch }),
    tooMuch,
  );
  assert.equal(over.response.destroyed, true);

  const readOnly = await open(dest, 'r');
  try {
    const badWrite = await get(url);
    await assert.rejects(writeBodySync(badWrite.response, { fd: readOnly.fd, position: 0, limit: body.length, atLimit: 'fail' }), {
      code: 'EBADF',
    });
    assert.equal(badWrite.response.destroyed, true);
  } finally {
    await readOnly.close();
  }

  const cancelled = await get(url);
  const stop = new AbortController();
  const reason = new Error('cancelled');
  const writing = writeBodySync(cancelled.response, { fd: file.fd, position: 0, limit: body.length, atLimit: 'fail', signal: stop.signal });
  stop.abort(reason);
  await assert.rejects(writing, reason);
  assert.equal(cancelled.response.destroyed, true);
});
