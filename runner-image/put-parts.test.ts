import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { putParts } from './put-parts.ts';
import { StorageAnswer } from './put-file.ts';

const MiB = 1024 * 1024;

/** Storage stand-in recording each part PUT's number, length and bytes; `fail` decides a 5xx (or other) instead. */
async function partServer(fail: (part: number, tries: number) => number | null = () => null) {
  const received = new Map<number, Buffer>();
  const tries = new Map<number, number>();
  let inFlight = 0;
  let mostInFlight = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const part = Number(new URL(req.url!, 'http://x').searchParams.get('partNumber'));
    tries.set(part, (tries.get(part) ?? 0) + 1);
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // Held a moment so that parallel parts overlap.
      setTimeout(() => {
        inFlight--;
        const status = fail(part, tries.get(part)!);
        if (status !== null) return void res.writeHead(status).end();
        const body = Buffer.concat(chunks);
        assert.equal(Number(req.headers['content-length']), body.length);
        received.set(part, body);
        res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` }).end();
      }, 20);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  };
  return { url, received, tries, mostInFlight: () => mostInFlight, close };
}

async function withFile(bytes: Buffer, body: (path: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'put-parts-'));
  try {
    const path = join(dir, 'out.mp4');
    await writeFile(path, bytes);
    await body(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const fileBytes = (size: number) => Buffer.from(Array.from({ length: size }, (_, i) => (i * 7 + (i >> 12)) & 0xff));
const plan = (url: string, partBytes: number, parts: number) => ({
  uploadId: 'up-1',
  partBytes,
  partUrls: Array.from({ length: parts }, (_, i) => `${url}/bucket/key?uploadId=up-1&partNumber=${i + 1}`),
});
const md5 = (b: Buffer) => `"${createHash('md5').update(b).digest('hex')}"`;

test('every part carries its own range of the file, several at once; the ETags come back in order', async () => {
  const storage = await partServer();
  const bytes = fileBytes(10 * MiB + 12345);
  try {
    await withFile(bytes, async (path) => {
      const upload = await putParts(plan(storage.url, 1 * MiB, 11), path, bytes.length, { signal: new AbortController().signal });
      assert.equal(upload.uploadId, 'up-1');
      assert.equal(upload.parts.length, 11);
      for (const [i, part] of upload.parts.entries()) {
        const expected = bytes.subarray(i * MiB, Math.min((i + 1) * MiB, bytes.length));
        assert.equal(part.partNumber, i + 1);
        assert.deepEqual(storage.received.get(i + 1), expected, `part ${i + 1}'s bytes`);
        assert.equal(part.etag, md5(expected));
      }
    });
    assert.equal(storage.mostInFlight(), 4, 'four parts at a time');
  } finally {
    await storage.close();
  }
});

test('a part that storage answers 503 once is sent again; the others are not', async () => {
  const storage = await partServer((part, tries) => (part === 2 && tries === 1 ? 503 : null));
  const bytes = fileBytes(3 * MiB);
  try {
    await withFile(bytes, async (path) => {
      const upload = await putParts(plan(storage.url, MiB, 3), path, bytes.length, {
        signal: new AbortController().signal,
        retryDelaysMs: [10, 10],
      });
      assert.equal(upload.parts[1].etag, md5(bytes.subarray(MiB, 2 * MiB)));
    });
    assert.deepEqual([...storage.tries].sort(), [
      [1, 1],
      [2, 2],
      [3, 1],
    ]);
  } finally {
    await storage.close();
  }
});

test('a part refused for good (403) fails the upload with its status and stops sending the rest', async () => {
  const storage = await partServer((part) => (part === 1 ? 403 : null));
  const bytes = fileBytes(8 * MiB);
  try {
    await withFile(bytes, async (path) => {
      await assert.rejects(
        putParts(plan(storage.url, MiB, 8), path, bytes.length, {
          signal: new AbortController().signal,
          concurrency: 2,
          retryDelaysMs: [10],
        }),
        (err: unknown) => err instanceof StorageAnswer && err.status === 403,
      );
    });
    assert.equal(storage.tries.get(1), 1, 'a 4xx is not tried again');
    assert.ok(storage.tries.size < 8, `parts after the failure were not started (${storage.tries.size} of 8 were)`);
  } finally {
    await storage.close();
  }
});

test('a part refused from its head (an expired URL): its status is the reason, not the connection storage closed', async () => {
  let refusedBodyBytes = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { etag: '"e"' }).end());
  });
  // As S3 does: the head of part 2 is refused before its body is asked for; the others are asked for it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url!, 'http://x').searchParams.get('partNumber') !== '2') {
      res.writeContinue();
      return void server.emit('request', req, res);
    }
    req.on('data', (c: Buffer) => (refusedBodyBytes += c.length));
    res.writeHead(403, { connection: 'close' }).end('AccessDenied');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const bytes = fileBytes(2 * 16 * MiB);
  try {
    await withFile(bytes, async (path) => {
      for (let i = 0; i < 5; i++) {
        await assert.rejects(
          putParts(plan(url, 16 * MiB, 2), path, bytes.length, { signal: new AbortController().signal, concurrency: 1, retryDelaysMs: [] }),
          (err: unknown) => err instanceof StorageAnswer && err.status === 403,
        );
      }
    });
    assert.equal(refusedBodyBytes, 0);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

test('a plan whose URLs do not fit the file is refused before anything is sent', async () => {
  const storage = await partServer();
  const bytes = fileBytes(3 * MiB);
  try {
    await withFile(bytes, async (path) => {
      await assert.rejects(
        putParts(plan(storage.url, MiB, 2), path, bytes.length, { signal: new AbortController().signal }),
        /2 part URLs for 3 parts/,
      );
    });
    assert.equal(storage.tries.size, 0);
  } finally {
    await storage.close();
  }
});

test('a cancel stops the upload', async () => {
  const storage = await partServer();
  const bytes = fileBytes(8 * MiB);
  const abort = new AbortController();
  try {
    await withFile(bytes, async (path) => {
      const upload = putParts(plan(storage.url, MiB, 8), path, bytes.length, { signal: abort.signal, concurrency: 1 });
      setTimeout(() => abort.abort(new Error('cancelled')), 30);
      await assert.rejects(upload, /cancelled|abort/i);
    });
    assert.ok(storage.received.size < 8);
  } finally {
    await storage.close();
  }
});
