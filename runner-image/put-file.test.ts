import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { putFile } from './put-file.ts';

/** A storage stand-in on loopback: `answer` decides what each PUT gets. */
async function storageServer(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(answer);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  };
  return { url, close };
}

async function withFile(bytes: number, body: (path: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'put-file-'));
  try {
    const path = join(dir, 'out.mp4');
    await writeFile(path, Buffer.alloc(bytes, 7));
    await body(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const options = (size: number) => ({ size, contentType: 'video/mp4', signal: new AbortController().signal });

test('the whole file goes as the body, with its length and type; two PUTs in a row', async () => {
  const received: { length: string | undefined; type: string | undefined; bytes: number }[] = [];
  const storage = await storageServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      received.push({ length: req.headers['content-length'], type: req.headers['content-type'], bytes });
      res.writeHead(200).end('<ok/>');
    });
  });
  try {
    await withFile(3 * 1024 * 1024 + 5, async (path) => {
      await putFile(`${storage.url}/put/a?sig=x`, path, options(3 * 1024 * 1024 + 5));
      await putFile(`${storage.url}/put/b?sig=x`, path, options(3 * 1024 * 1024 + 5));
    });
    assert.deepEqual(received, [
      { length: String(3 * 1024 * 1024 + 5), type: 'video/mp4', bytes: 3 * 1024 * 1024 + 5 },
      { length: String(3 * 1024 * 1024 + 5), type: 'video/mp4', bytes: 3 * 1024 * 1024 + 5 },
    ]);
  } finally {
    await storage.close();
  }
});

test('storage that closes the connection with its answer (a server shutting down): the answer counts', async () => {
  const storage = await storageServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { connection: 'close' }).end();
      res.socket?.destroy();
    });
  });
  try {
    await withFile(4 * 1024 * 1024, async (path) => {
      for (let i = 0; i < 20; i++) await putFile(`${storage.url}/put/a`, path, options(4 * 1024 * 1024));
    });
  } finally {
    await storage.close();
  }
});

test('storage refusing before it reads the body: the status is the reason, not the cut connection', async () => {
  const storage = await storageServer((_req, res) => {
    // The body is left unread.
    res.writeHead(403, { connection: 'close' }).end('SignatureDoesNotMatch');
  });
  try {
    await withFile(16 * 1024 * 1024, async (path) => {
      await assert.rejects(putFile(`${storage.url}/put/a`, path, options(16 * 1024 * 1024)), { message: 'storage answered HTTP 403' });
    });
  } finally {
    await storage.close();
  }
});

test('no storage listening, or the step stopped during the upload: the PUT fails', async () => {
  const storage = await storageServer(() => {}); // reads nothing, answers nothing
  const gone = await storageServer(() => {});
  await gone.close();
  try {
    await withFile(1024, async (path) => {
      await assert.rejects(putFile(`${gone.url}/put/a`, path, options(1024)), { code: 'ECONNREFUSED' });
      const stop = new AbortController();
      const putting = putFile(`${storage.url}/put/a`, path, { ...options(1024), signal: stop.signal });
      setTimeout(() => stop.abort(), 50);
      await assert.rejects(putting, { name: 'AbortError' });
    });
  } finally {
    await storage.close();
  }
});
