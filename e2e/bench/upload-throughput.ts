// Benchmark: a multipart upload through presigned part URLs (what a client or runner does), to
//   (a) the local-folder backend served by storageFilesRoutes on a real @hono/node-server, in a
//       process of its own (as versitygw is) so the uploading client does not share its thread;
//   (b) S3Storage on versitygw (started through scripts/versitygw.sh unless FFOP_TEST_S3_ENDPOINT is set);
// next to (a') `cp` of the same file to the same disk (also with an fsync of the copy, as the local
// backend fsyncs every part and the assembled object), (a'') the same parts PUT by the same client to
// a bare node:http server that streams each body to a file and fsyncs it (the row's baseline), and
// (b') one presigned PUT of the whole file.
// Every upload is checked afterwards (size and MD5 of what was stored). Each figure is the best of
// `runs` runs: other work on the machine makes single runs noisy.
// Run: npx tsx e2e/bench/upload-throughput.ts [sizeMiB=200] [partMiB=16] [parallel=3] [runs=3]
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { FileHandle } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Client } from 'minio';
import { storageFilesRoutes } from '../../api/routes/storage-files.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import { S3Storage } from '../../core/storage/s3-storage.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { reportRow } from './stats.ts';

const MiB = 1024 * 1024;
const SERVE_LOCAL = '--serve-local';
const SERVE_BARE = '--serve-bare';
const run = promisify(execFile);
const versitygwScript = fileURLToPath(new URL('../../scripts/versitygw.sh', import.meta.url));

interface Upload {
  source: string;
  size: number;
  md5: string;
  partBytes: number;
  parallel: number;
}

if (process.argv[2] === SERVE_LOCAL) {
  await serveLocal(process.argv[3], process.argv[4]);
} else if (process.argv[2] === SERVE_BARE) {
  await serveBare(process.argv[3]);
} else {
  const [sizeMiB = 200, partMiB = 16, parallel = 3, runs = 3] = process.argv.slice(2).map(Number);
  await main(sizeMiB * MiB, partMiB * MiB, parallel, runs);
}

async function main(size: number, partBytes: number, parallel: number, runs: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-upload-bench-'));
  const cleanups: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  try {
    const source = join(dir, 'source.bin');
    const upload: Upload = { source, size, md5: await writeRandomFile(source, size), partBytes, parallel };
    console.log(`${size / MiB} MiB of random bytes in ${dir}; parts of ${partBytes / MiB} MiB, ${parallel} in parallel; best of ${runs}`);

    const local = await startLocal(join(dir, 'local-root'));
    cleanups.push(local.close);
    const bare = await startChildServer([SERVE_BARE, join(dir, 'bare-root')]);
    cleanups.push(bare.close);
    const s3 = await startS3();
    cleanups.push(s3.close);

    // An action may return the seconds its completion step took (multipart uploads).
    const cases: [string, () => Promise<unknown>, () => Promise<unknown>][] = [
      ["(a') cp, same disk", () => run('cp', [source, join(dir, 'copy.bin')]), () => rm(join(dir, 'copy.bin'))],
      [
        "(a') cp + sync of the copy",
        async () => {
          await run('cp', [source, join(dir, 'copy.bin')]);
          await run('sync', [join(dir, 'copy.bin')]);
        },
        () => rm(join(dir, 'copy.bin')),
      ],
      [
        "(a'') bare node:http, parts + fsync",
        () => putParts(upload, async (n) => `${bare.url}/parts/${n}`),
        () => rm(join(dir, 'bare-root', 'parts'), { recursive: true, force: true }),
      ],
      [
        '(a) local, presigned parts',
        () => uploadInParts(local.storage, 'bench/a.bin', upload),
        () => checkAndDelete(local.storage, 'bench/a.bin', upload),
      ],
      [
        '(a) local, one presigned PUT',
        () => uploadWhole(local.storage, 'bench/a.bin', upload),
        () => checkAndDelete(local.storage, 'bench/a.bin', upload),
      ],
      [
        '(b) versitygw, presigned parts',
        () => uploadInParts(s3.storage, 'bench/b.bin', upload),
        () => checkAndDelete(s3.storage, 'bench/b.bin', upload),
      ],
      [
        "(b') versitygw, one presigned PUT",
        () => uploadWhole(s3.storage, 'bench/b.bin', upload),
        () => checkAndDelete(s3.storage, 'bench/b.bin', upload),
      ],
    ];
    const rows: { what: string; seconds: number; completion: unknown }[] = [];
    for (const [what, action, after] of cases) {
      let best = { what, seconds: Infinity, completion: undefined as unknown };
      for (let i = 0; i < runs; i++) {
        const start = performance.now();
        const completion = await action();
        const seconds = (performance.now() - start) / 1000;
        if (seconds < best.seconds) best = { what, seconds, completion };
        await after();
      }
      rows.push(best);
    }

    console.log();
    console.log(`${'upload of the file'.padEnd(36)} ${'seconds'.padStart(8)} ${'MiB/s'.padStart(8)}  of which completion`);
    for (const row of rows) {
      const completion = typeof row.completion === 'number' ? `${row.completion.toFixed(2)} s` : '';
      console.log(
        `${row.what.padEnd(36)} ${row.seconds.toFixed(2).padStart(8)} ${(size / MiB / row.seconds).toFixed(0).padStart(8)}  ${completion}`,
      );
    }
    const mibs = (what: string) => size / MiB / rows.find((r) => r.what.startsWith(what))!.seconds;
    reportRow({
      what: `upload of ${size / MiB} MiB in presigned parts of ${partBytes / MiB} MiB, ${parallel} in parallel (local storage backend)`,
      service: `${mibs('(a) local, presigned parts').toFixed(0)} MiB/s`,
      baseline: `${mibs("(a'')").toFixed(0)} MiB/s (bare node:http, fsync)`,
      ratio: `${(mibs('(a) local, presigned parts') / mibs("(a'')")).toFixed(2)}x`,
      goal: '>= 0.9x',
    });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err: unknown) => console.error('cleanup:', err));
  }
}

/**
 * Starts the upload, PUTs the parts through presigned URLs `parallel` at a time, completes.
 * Returns the seconds the completion took.
 */
async function uploadInParts(storage: Storage, key: string, upload: Upload): Promise<number> {
  const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', upload.partBytes);
  const etags = await putParts(upload, (n, length) => storage.presignUploadPart(key, uploadId, n, 3600, length));
  const start = performance.now();
  await storage.completeMultipartUpload(
    key,
    uploadId,
    etags.map((etag, i) => ({ partNumber: i + 1, etag })),
  );
  return (performance.now() - start) / 1000;
}

/** PUTs the file's parts to the URLs `urlOf` gives (part numbers from 1), `parallel` at a time; returns the ETags. */
async function putParts(upload: Upload, urlOf: (partNumber: number, length: number) => Promise<string>): Promise<string[]> {
  const count = Math.ceil(upload.size / upload.partBytes);
  const etags: string[] = [];
  const file = await open(upload.source, 'r');
  let next = 0;
  async function sender(): Promise<void> {
    while (next < count) {
      const index = next++;
      const offset = index * upload.partBytes;
      const body = await readSlice(file, offset, Math.min(upload.partBytes, upload.size - offset));
      const res = await fetch(await urlOf(index + 1, body.length), { method: 'PUT', body });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`part ${index + 1}: ${res.status} ${text}`);
      etags[index] = res.headers.get('etag') ?? '';
    }
  }
  try {
    await Promise.all(Array.from({ length: upload.parallel }, sender));
  } finally {
    await file.close();
  }
  return etags;
}

async function uploadWhole(storage: Storage, key: string, upload: Upload): Promise<void> {
  const file = await open(upload.source, 'r');
  const body = await readSlice(file, 0, upload.size).finally(() => file.close());
  const res = await fetch(await storage.presignPut(key, 3600), { method: 'PUT', body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`PUT: ${res.status} ${text}`);
}

async function readSlice(file: FileHandle, position: number, length: number): Promise<Buffer<ArrayBuffer>> {
  const buffer = Buffer.alloc(length);
  for (let done = 0; done < length;) {
    const { bytesRead } = await file.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) throw new Error('source file ended early');
    done += bytesRead;
  }
  return buffer;
}

async function checkAndDelete(storage: Storage, key: string, upload: Upload): Promise<void> {
  const info = await storage.stat(key);
  if (info?.size !== upload.size) throw new Error(`${key}: stored size ${info?.size}, expected ${upload.size}`);
  const hash = createHash('md5');
  for await (const chunk of await storage.read(key)) hash.update(chunk as Buffer);
  if (hash.digest('hex') !== upload.md5) throw new Error(`${key}: stored bytes differ from the source`);
  await storage.delete(key);
}

async function writeRandomFile(path: string, size: number): Promise<string> {
  const file = await open(path, 'w');
  const hash = createHash('md5');
  try {
    for (let written = 0; written < size;) {
      const chunk = randomBytes(Math.min(16 * MiB, size - written));
      hash.update(chunk);
      await file.write(chunk);
      written += chunk.length;
    }
  } finally {
    await file.close();
  }
  return hash.digest('hex');
}

/**
 * The local backend's HTTP server runs in a child process (this file with SERVE_LOCAL); this process
 * drives the same folder with a LocalStorage of the same root and signing key, as the API would.
 */
async function startLocal(root: string): Promise<{ storage: LocalStorage; close: () => Promise<void> }> {
  const signingKey = randomBytes(32).toString('hex');
  const server = await startChildServer([SERVE_LOCAL, root, signingKey]);
  return { storage: new LocalStorage({ root, publicBaseUrl: server.url, signingKey }), close: server.close };
}

/** This file in a child process with `args` (a server mode): its first line is its URL; it exits when its stdin closes. */
async function startChildServer(args: string[]): Promise<{ url: string; close: () => Promise<void> }> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const [url] = (await Promise.race([
    once(createInterface({ input: child.stdout }), 'line'),
    exited.then(() => Promise.reject(new Error(`the ${args[0]} server exited`))),
  ])) as string[];
  return {
    url,
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}

/** The baseline server: each PUT body streamed to `root/<path>`, fsynced, then 200. */
async function serveBare(root: string): Promise<void> {
  const server = createServer((req, res) => {
    void (async () => {
      const path = join(root, new URL(req.url ?? '/', 'http://x').pathname);
      await mkdir(join(path, '..'), { recursive: true });
      const file = await open(path, 'w');
      try {
        for await (const chunk of req) await file.write(chunk as Buffer);
        await file.sync();
      } finally {
        await file.close();
      }
      res.writeHead(200, { etag: '"bare"' }).end();
    })().catch((err: Error) => res.writeHead(500).end(err.message));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  process.stdin.resume();
  process.stdin.once('end', () => {
    server.closeAllConnections();
    server.close();
  });
}

async function serveLocal(root: string, signingKey: string): Promise<void> {
  const storage = new LocalStorage({ root, publicBaseUrl: 'http://unused.invalid', signingKey });
  const app = new Hono().route('/', storageFilesRoutes(storage));
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
  console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  process.stdin.resume();
  process.stdin.once('end', () => {
    server.closeAllConnections();
    server.close();
  });
}

async function startS3(): Promise<{ storage: S3Storage; close: () => Promise<void> }> {
  let env: Record<string, string | undefined> = process.env;
  let stopServer = async () => {};
  if (!env.FFOP_TEST_S3_ENDPOINT) {
    const wasRunning = await run('bash', [versitygwScript, 'status']).then(
      () => true,
      () => false,
    );
    const { stdout } = await run('bash', [versitygwScript, 'start'], { timeout: 20 * 60_000 });
    env = Object.fromEntries([...stdout.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
    if (!wasRunning) stopServer = async () => void (await run('bash', [versitygwScript, 'stop']));
  }
  const endpoint = new URL(env.FFOP_TEST_S3_ENDPOINT as string);
  const credentials = {
    region: env.FFOP_TEST_S3_REGION || 'us-east-1',
    accessKey: env.FFOP_TEST_S3_ACCESS_KEY as string,
    secretKey: env.FFOP_TEST_S3_SECRET_KEY as string,
  };
  const bucket = `ffop-bench-${randomUUID().slice(0, 8)}`;
  const admin = new Client({
    endPoint: endpoint.hostname,
    port: Number(endpoint.port || 80),
    useSSL: endpoint.protocol === 'https:',
    pathStyle: true,
    ...credentials,
  });
  await admin.makeBucket(bucket, credentials.region);
  return {
    storage: new S3Storage({ endpoint: endpoint.origin, bucket, ...credentials }),
    async close() {
      await admin.removeBucket(bucket);
      await stopServer();
    },
  };
}
