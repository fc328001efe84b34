import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { putFile, StorageAnswer } from './put-file.ts';
import { HANDOFF_HEADER, HANDOFF_SIZE_HEADER } from '../core/storage/handoff.ts';

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
  return { url, server, close };
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

test('storage refusing from the head, as S3 does a bad signature: no byte of the body goes, and its status is the reason', async () => {
  let bodyBytes = 0;
  let refused = 0;
  const storage = await storageServer(() => assert.fail('a refused PUT reaches no handler'));
  // S3 decides on a PUT's head before it asks for the body; a node server decides here.
  storage.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    refused++;
    req.on('data', (chunk: Buffer) => (bodyBytes += chunk.length));
    res.writeHead(403, { connection: 'close' }).end('SignatureDoesNotMatch');
  });
  try {
    await withFile(16 * 1024 * 1024, async (path) => {
      // Sent at once, 16 MiB meets the closed connection often enough (EPIPE) to show in 10 tries.
      for (let i = 0; i < 10; i++) {
        await assert.rejects(putFile(`${storage.url}/put/a`, path, options(16 * 1024 * 1024)), { message: 'storage answered HTTP 403' });
      }
    });
    assert.equal(refused, 10, 'a 4xx is not tried again');
    assert.equal(bodyBytes, 0);
  } finally {
    await storage.close();
  }
});

test('storage that never asks for the body (ignores Expect): the body goes after the wait', async () => {
  let bytes = 0;
  const storage = await storageServer(() => assert.fail('answered in checkContinue'));
  // Takes the request without sending "100 Continue", then reads what comes.
  storage.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200).end());
  });
  try {
    await withFile(2 * 1024 * 1024, async (path) => {
      await putFile(`${storage.url}/put/a`, path, { ...options(2 * 1024 * 1024), continueWaitMs: 50 });
    });
    assert.equal(bytes, 2 * 1024 * 1024);
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

test('hand-off: the file is moved into the hand-off folder and the PUT names it, with no body', async () => {
  const handoffDir = await mkdtemp(join(tmpdir(), 'put-file-handoff-'));
  const seen: { name: string; size: string | undefined; length: string | undefined; bytes: number; there: number }[] = [];
  const storage = await storageServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      const name = String(req.headers[HANDOFF_HEADER]);
      void stat(join(handoffDir, name)).then(async (s) => {
        seen.push({ name, size: req.headers[HANDOFF_SIZE_HEADER] as string, length: req.headers['content-length'], bytes, there: s.size });
        // Adopts the first; refuses the second (which leaves the file for the runner to remove).
        if (seen.length === 1) await rm(join(handoffDir, name));
        res.writeHead(seen.length === 1 ? 200 : 400).end();
      });
    });
  });
  try {
    await withFile(70_000, async (path) => {
      await putFile(`${storage.url}/put/a?sig=x`, path, { ...options(70_000), handoffDir });
      await assert.rejects(stat(path), { code: 'ENOENT' }); // moved, not copied
    });
    await withFile(10, async (path) => {
      await assert.rejects(putFile(`${storage.url}/put/b?sig=x`, path, { ...options(10), handoffDir }), (err: unknown) => {
        assert.ok(err instanceof StorageAnswer);
        assert.equal(err.status, 400);
        return true;
      });
    });
    assert.deepEqual(
      seen.map(({ size, length, bytes, there }) => ({ size, length, bytes, there })),
      [
        { size: '70000', length: '0', bytes: 0, there: 70_000 },
        { size: '10', length: '0', bytes: 0, there: 10 },
      ],
    );
    assert.match(seen[0].name, /^[A-Za-z0-9_-]{32}$/);
    assert.deepEqual(await readdir(handoffDir), [], 'the refused file was removed by the runner');
  } finally {
    await storage.close();
    await rm(handoffDir, { recursive: true, force: true });
  }
});

test('hand-off folder unusable (e.g. another filesystem): the bytes go in the body as before', async () => {
  let received = 0;
  const storage = await storageServer((req, res) => {
    assert.equal(req.headers[HANDOFF_HEADER], undefined);
    req.on('data', (chunk: Buffer) => (received += chunk.length));
    req.on('end', () => res.writeHead(200).end());
  });
  try {
    await withFile(1000, async (path) => {
      await putFile(`${storage.url}/put/a?sig=x`, path, { ...options(1000), handoffDir: '/nonexistent/handoff' });
      assert.equal((await stat(path)).size, 1000);
    });
    assert.equal(received, 1000);
  } finally {
    await storage.close();
  }
});

test('a 507 from storage is a StorageAnswer with that status', async () => {
  const storage = await storageServer((req, res) => res.writeHead(507).end('{"detail":"full"}'));
  try {
    await withFile(10, async (path) => {
      await assert.rejects(putFile(`${storage.url}/put/a?sig=x`, path, options(10)), { name: 'StorageAnswer', status: 507 });
    });
  } finally {
    await storage.close();
  }
});

test('storage answering 503 twice: the PUT is tried again and the third one stores the whole file', async () => {
  const bodies: number[] = [];
  const storage = await storageServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      bodies.push(bytes);
      res.writeHead(bodies.length <= 2 ? 503 : 200).end();
    });
  });
  try {
    await withFile(100_000, async (path) => {
      await putFile(`${storage.url}/put/a?sig=x`, path, { ...options(100_000), retryDelaysMs: [10, 10] });
    });
    assert.deepEqual(bodies, [100_000, 100_000, 100_000]);
  } finally {
    await storage.close();
  }
});

test('storage answering 500 every time, or 403 once: the 500 after three tries, the 403 at once', async () => {
  let requests = 0;
  let status = 500;
  const storage = await storageServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => res.writeHead(status).end());
  });
  try {
    await withFile(10, async (path) => {
      await assert.rejects(putFile(`${storage.url}/put/a`, path, { ...options(10), retryDelaysMs: [10, 10] }), { status: 500 });
      assert.equal(requests, 3);
      requests = 0;
      status = 403;
      await assert.rejects(putFile(`${storage.url}/put/a`, path, { ...options(10), retryDelaysMs: [10, 10] }), { status: 403 });
      assert.equal(requests, 1);
    });
  } finally {
    await storage.close();
  }
});
