import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, mkdtemp, open, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { get, request } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { storageFilesRoutes } from '../../api/routes/storage-files.ts';
import { inChunks, readAll, storageContract } from './testing/storage-contract.ts';
import { HandoffRefused, LocalStorage } from './local-storage.ts';
import { HANDOFF_HEADER, HANDOFF_SIZE_HEADER } from './handoff.ts';
import { freeBytes } from './out-of-space.ts';
import { UploadNotFound } from './storage.ts';

const SIGNING_KEY = 'test-signing-key-0123456789abcdef';

interface LocalFixture {
  storage: LocalStorage;
  root: string;
  baseUrl: string;
  close(): Promise<void>;
}

/** A LocalStorage in a temp folder, served by the storage routes on a real socket. */
// Parts far below S3's 5 MiB keep the multipart tests quick; the rule itself is the same.
const TEST_MIN_PART_BYTES = 64 * 1024;
/** Part size of uploads whose tests send one part, or parts of any size under it. */
const TEST_PART_BYTES = 200_000;

interface LocalOptions {
  clock?: () => number;
  reserveBytes?: number;
  maxUploadBytes?: number;
  maxPartBytes?: number;
}

async function startLocal(opts: LocalOptions = {}): Promise<LocalFixture> {
  const root = await mkdtemp(join(tmpdir(), 'local-storage-'));
  const app = new Hono(); // routes are added once the storage exists
  const server = serve({ fetch: (req, env) => app.fetch(req, env), port: 0, hostname: '127.0.0.1' }) as Server;
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const storage = new LocalStorage({
    root,
    publicBaseUrl: baseUrl,
    signingKey: SIGNING_KEY,
    clock: opts.clock,
    minPartBytes: TEST_MIN_PART_BYTES,
  });
  app.route(
    '/',
    storageFilesRoutes(storage, {
      maxUploadBytes: opts.maxUploadBytes ?? 8 * 1024 * 1024,
      maxPartBytes: opts.maxPartBytes,
      reserveBytes: opts.reserveBytes,
    }),
  );
  return {
    storage,
    root,
    baseUrl,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
      await rm(root, { recursive: true, force: true });
    },
  };
}

storageContract('local folder', ({ clock }) => startLocal({ clock }), { minPartBytes: TEST_MIN_PART_BYTES });

/** A PUT through node:http, so the test controls framing headers exactly. */
function rawPut(url: string, body: Buffer, headers: Record<string, string>, chunked = false) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    if (chunked) req.write(body);
    req.end(chunked ? undefined : body);
  });
}

describe('local storage over HTTP', () => {
  let fx: LocalFixture;
  before(async () => {
    fx = await startLocal();
  });
  after(async () => {
    await fx?.close();
  });

  const data = Buffer.from('0123456789');
  async function stored(key: string, contentType = 'video/mp4'): Promise<string> {
    await fx.storage.put(key, inChunks(data, 3), { size: data.length, contentType });
    return fx.storage.presignGet(key, 600);
  }

  test('ranges: first bytes, middle, suffix, open-ended, clamped, and several ranges served whole', async () => {
    const url = await stored('ranges/ten.bin');
    const cases: Array<[string, number, string | null, string]> = [
      ['bytes=0-3', 206, 'bytes 0-3/10', '0123'],
      ['bytes=2-5', 206, 'bytes 2-5/10', '2345'],
      ['bytes=9-9', 206, 'bytes 9-9/10', '9'],
      ['bytes=-3', 206, 'bytes 7-9/10', '789'],
      ['bytes=5-', 206, 'bytes 5-9/10', '56789'],
      ['bytes=8-100', 206, 'bytes 8-9/10', '89'],
      ['bytes=-100', 206, 'bytes 0-9/10', '0123456789'],
      ['bytes=0-1,4-5', 200, null, '0123456789'],
      ['items=0-1', 200, null, '0123456789'],
      ['bytes=5-3', 200, null, '0123456789'],
    ];
    for (const [range, status, contentRange, body] of cases) {
      const res = await fetch(url, { headers: { Range: range } });
      assert.equal(res.status, status, range);
      assert.equal(res.headers.get('content-range'), contentRange, range);
      assert.equal(await res.text(), body, range);
    }
  });

  test('an unsatisfiable range answers 416 with the size', async () => {
    const url = await stored('ranges/small.bin');
    for (const range of ['bytes=10-', 'bytes=1000-2000', 'bytes=-0']) {
      const res = await fetch(url, { headers: { Range: range } });
      assert.equal(res.status, 416, range);
      assert.equal(res.headers.get('content-range'), 'bytes */10');
      assert.equal(typeof (await res.json()).detail, 'string');
    }
  });

  test('HEAD answers the headers of GET without a body', async () => {
    const url = await stored('head/file.mp4');
    const res = await fetch(url, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), '10');
    assert.equal(res.headers.get('content-type'), 'video/mp4');
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.equal(await res.text(), '');
    const ranged = await fetch(url, { method: 'HEAD', headers: { Range: 'bytes=2-5' } });
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers.get('content-length'), '4');
    assert.equal(ranged.headers.get('content-range'), 'bytes 2-5/10');
    const refused = await fetch(fx.storage.publicUrl('head/file.mp4'), { method: 'HEAD' });
    assert.equal(refused.status, 403);
  });

  test('Content-Type comes from the sidecar written at put, not from the extension', async () => {
    const url = await stored('types/clip.mp4', 'application/x-custom; charset=binary');
    const res = await fetch(url);
    await res.arrayBuffer();
    assert.equal(res.headers.get('content-type'), 'application/x-custom; charset=binary');
    const sidecar = JSON.parse(await readFile(join(fx.root, 'meta', 'types', 'clip.mp4'), 'utf8'));
    assert.equal(sidecar.contentType, 'application/x-custom; charset=binary');
    assert.equal((await fx.storage.stat('types/clip.mp4'))?.contentType, 'application/x-custom; charset=binary');
  });

  test('served files carry safety, caching and naming headers', async () => {
    const signed = await fetch(await stored('headers/été clip.mp4'));
    await signed.arrayBuffer();
    assert.equal(signed.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(signed.headers.get('cache-control'), 'private, no-store');
    assert.equal(signed.headers.get('content-security-policy'), 'sandbox');
    assert.equal(signed.headers.get('content-disposition'), `inline; filename="_t_ clip.mp4"; filename*=UTF-8''%C3%A9t%C3%A9%20clip.mp4`);
    assert.match(signed.headers.get('etag') ?? '', /^"[0-9a-f]+-[0-9a-f]+"$/);

    await stored('public/headers/page.html', 'text/html');
    const pub = await fetch(fx.storage.publicUrl('public/headers/page.html'));
    await pub.arrayBuffer();
    assert.equal(pub.status, 200);
    assert.match(pub.headers.get('cache-control') ?? '', /^public, max-age=\d+$/);
    assert.equal(pub.headers.get('content-security-policy'), 'sandbox');
  });

  test('the ETag changes when the object is replaced', async () => {
    const url = await stored('etag/file.bin');
    const first = (await fetch(url, { method: 'HEAD' })).headers.get('etag');
    await fx.storage.put('etag/file.bin', inChunks(data, 4), { size: data.length, contentType: 'text/plain' });
    const second = (await fetch(url, { method: 'HEAD' })).headers.get('etag');
    assert.ok(first && second);
    assert.notEqual(first, second);
  });

  test('refusals and misses answer JSON {detail}; unsigned misses do not reveal existence', async () => {
    const missingSigned = await fetch(await fx.storage.presignGet('nothing/here.mp4', 600));
    assert.equal(missingSigned.status, 404);
    assert.equal(typeof (await missingSigned.json()).detail, 'string');

    const missingUnsigned = await fetch(fx.storage.publicUrl('nothing/here.mp4'));
    assert.equal(missingUnsigned.status, 403);
    assert.equal(typeof (await missingUnsigned.json()).detail, 'string');

    const missingPublic = await fetch(fx.storage.publicUrl('public/nothing.mp4'));
    assert.equal(missingPublic.status, 404);
    await missingPublic.arrayBuffer();
  });

  test('request paths that are not valid keys answer 400', async () => {
    for (const path of [
      '/storage/a//b.mp4',
      '/storage/..%2F..%2Fetc%2Fpasswd',
      '/storage/a%5Cb.mp4',
      '/storage/a%00b.mp4',
      '/storage/%E0%A4%A.mp4',
      '/storage/',
    ]) {
      const res = await fetch(fx.baseUrl + path);
      assert.equal(res.status, 400, path);
      assert.equal(typeof (await res.json()).detail, 'string');
    }
  });

  test('PUT stores the body with its Content-Type and answers the MD5 ETag', async () => {
    const body = randomBytes(3000);
    const url = await fx.storage.presignPut('uploads/out.webm', 600);
    const res = await rawPut(url, body, { 'Content-Length': String(body.length), 'Content-Type': 'video/webm' });
    assert.equal(res.status, 200);
    assert.deepEqual(await fx.storage.stat('uploads/out.webm'), { size: 3000, contentType: 'video/webm' });
    const check = await fetch(await fx.storage.presignGet('uploads/out.webm', 600));
    assert.deepEqual(Buffer.from(await check.arrayBuffer()), body);
    assert.notEqual(check.headers.get('etag'), `"${createHash('md5').update(body).digest('hex')}"`); // GET's is size+mtime
  });

  test('PUT without Content-Type guesses it from the extension', async () => {
    const url = await fx.storage.presignPut('uploads/guess.mp3', 600);
    const res = await rawPut(url, Buffer.from('id3'), { 'Content-Length': '3' });
    assert.equal(res.status, 200);
    assert.equal((await fx.storage.stat('uploads/guess.mp3'))?.contentType, 'audio/mpeg');
  });

  test('PUT without Content-Length answers 411 and stores nothing', async () => {
    const url = await fx.storage.presignPut('uploads/chunked.bin', 600);
    const res = await rawPut(url, Buffer.from('streamed'), { 'Transfer-Encoding': 'chunked' }, true);
    assert.equal(res.status, 411);
    assert.equal(typeof JSON.parse(res.body).detail, 'string');
    assert.equal(await fx.storage.stat('uploads/chunked.bin'), null);
  });

  test('PUT to a public/ key still needs a signed PUT URL', async () => {
    const res = await rawPut(fx.storage.publicUrl('public/sneaky.mp4'), Buffer.from('x'), { 'Content-Length': '1' });
    assert.equal(res.status, 403);
    assert.equal(typeof JSON.parse(res.body).detail, 'string');
    assert.equal(await fx.storage.stat('public/sneaky.mp4'), null);
  });

  test('PUT onto a key whose folder is an existing file answers 409', async () => {
    await stored('clash/file');
    const url = await fx.storage.presignPut('clash/file/inner.bin', 600);
    const res = await rawPut(url, Buffer.from('x'), { 'Content-Length': '1' });
    assert.equal(res.status, 409);
    assert.equal((await fx.storage.stat('clash/file'))?.size, 10);
  });
});

describe('local storage: serving a file larger than any buffer', () => {
  // 1 GiB, sparse: a few marks of 16 bytes in holes of zeros, so the test needs no disk space.
  const size = 1024 ** 3;
  const MiB = 1024 * 1024;
  const marks = [0, MiB - 5, 333 * MiB + 11, 700 * MiB, size - 16];
  const mark = (at: number) => Buffer.from(`mark@${at}`.padEnd(16, '.'));
  const zeros = Buffer.alloc(4 * MiB);
  /** Bytes at..at+length of the file (length at most 4 MiB). */
  function expected(at: number, length: number): Buffer {
    const overlapping = marks.filter((m) => m + 16 > at && m < at + length);
    if (overlapping.length === 0) return zeros.subarray(0, length);
    const bytes = Buffer.alloc(length);
    for (const m of overlapping) mark(m).copy(bytes, Math.max(0, m - at), Math.max(0, at - m));
    return bytes;
  }
  let fx: LocalFixture;
  let url: string;
  before(async () => {
    fx = await startLocal();
    const path = join(fx.root, 'sparse.bin');
    const file = await open(path, 'w');
    try {
      await file.truncate(size);
      for (const at of marks) await file.write(mark(at), 0, 16, at);
    } finally {
      await file.close();
    }
    await fx.storage.putFile('large/sparse.bin', path, 'application/octet-stream');
    url = await fx.storage.presignGet('large/sparse.bin', 600);
  });
  after(async () => {
    await fx?.close();
  });

  /** GETs `range` (or the whole file) and compares every byte as it arrives, keeping none. */
  async function fetchAndCompare(range: string | null, status: number, start: number, length: number, contentRange: string | null) {
    const what = range ?? 'the whole file';
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get(url, { headers: range ? { Range: range } : {} }, resolve).once('error', reject),
    );
    assert.equal(res.statusCode, status, what);
    assert.equal(res.headers['content-range'], contentRange ?? undefined, what);
    assert.equal(res.headers['content-length'], String(length), what);
    let at = start;
    let differing = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      if (!chunk.equals(expected(at, chunk.length))) differing++;
      at += chunk.length;
    }
    assert.equal(at - start, length, `bytes received for ${what}`);
    assert.equal(differing, 0, what);
  }

  test('the whole file arrives, every byte in place', async () => {
    await fetchAndCompare(null, 200, 0, size, null);
  });

  test('ranges: first bytes, a middle range across buffers, suffix, open end', async () => {
    await fetchAndCompare('bytes=0-99', 206, 0, 100, `bytes 0-99/${size}`);
    const middle = 333 * MiB - 2 * MiB;
    await fetchAndCompare(
      `bytes=${middle}-${middle + 5 * MiB - 1}`,
      206,
      middle,
      5 * MiB,
      `bytes ${middle}-${middle + 5 * MiB - 1}/${size}`,
    );
    await fetchAndCompare(`bytes=-${3 * MiB}`, 206, size - 3 * MiB, 3 * MiB, `bytes ${size - 3 * MiB}-${size - 1}/${size}`);
    await fetchAndCompare(`bytes=${700 * MiB}-`, 206, 700 * MiB, size - 700 * MiB, `bytes ${700 * MiB}-${size - 1}/${size}`);
  });

  test('a range from the size on answers 416', async () => {
    const res = await fetch(url, { headers: { Range: `bytes=${size}-` } });
    assert.equal(res.status, 416);
    assert.equal(res.headers.get('content-range'), `bytes */${size}`);
    await res.arrayBuffer();
  });

  test('a client that goes away mid-download does not stop the server serving others', async () => {
    for (let i = 0; i < 3; i++) {
      const aborted = new AbortController();
      const res = await fetch(url, { signal: aborted.signal });
      const reader = res.body!.getReader();
      await reader.read();
      aborted.abort();
      await reader.closed.catch(() => {});
    }
    await fetchAndCompare(`bytes=${MiB - 10}-${MiB + 9}`, 206, MiB - 10, 20, `bytes ${MiB - 10}-${MiB + 9}/${size}`);
  });

  test('attack: a symbolic link in the objects folder is not served, even with a valid signature', async () => {
    const outside = join(fx.root, 'outside-secret.txt');
    await writeFile(outside, 'secret');
    await mkdir(join(fx.root, 'objects', 'links'), { recursive: true });
    await symlink(outside, join(fx.root, 'objects', 'links', 'secret.txt'));
    const res = await fetch(await fx.storage.presignGet('links/secret.txt', 600));
    assert.equal(res.status, 404);
    assert.doesNotMatch(await res.text(), /secret/);
  });
});

describe('local storage: upload size cap', () => {
  let fx: LocalFixture;
  before(async () => {
    fx = await startLocal({ maxUploadBytes: 100 });
  });
  after(async () => {
    await fx?.close();
  });

  test('PUT larger than the cap answers 413 and stores nothing; at the cap it is stored', async () => {
    const over = await rawPut(await fx.storage.presignPut('cap/big.bin', 600), randomBytes(101), { 'Content-Length': '101' });
    assert.equal(over.status, 413);
    assert.equal(await fx.storage.stat('cap/big.bin'), null);
    const at = await rawPut(await fx.storage.presignPut('cap/ok.bin', 600), randomBytes(100), { 'Content-Length': '100' });
    assert.equal(at.status, 200);
    assert.equal((await fx.storage.stat('cap/ok.bin'))?.size, 100);
  });
});

describe('local storage: files on disk', () => {
  let root: string;
  let storage: LocalStorage;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'local-storage-disk-'));
    storage = new LocalStorage({ root, publicBaseUrl: 'http://files.test/', signingKey: SIGNING_KEY });
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('objects live under objects/<key> and failed puts leave no temp files', async () => {
    await storage.put('disk/a.bin', inChunks(Buffer.from('abc'), 1), { size: 3, contentType: 'text/plain' });
    assert.equal(await readFile(join(root, 'objects', 'disk', 'a.bin'), 'utf8'), 'abc');
    await assert.rejects(storage.put('disk/b.bin', inChunks(Buffer.from('abc'), 1), { size: 4, contentType: 'text/plain' }));
    await assert.rejects(storage.put('disk/b.bin', failingStream(Buffer.from('partial')), { size: 100, contentType: 'text/plain' }));
    assert.deepEqual(await readdir(join(root, 'tmp')), []);
    await assert.rejects(stat(join(root, 'objects', 'disk', 'b.bin')), { code: 'ENOENT' });
  });

  test('a replace that fails mid-stream keeps the old bytes (atomic replace)', async () => {
    await storage.put('disk/atomic.bin', inChunks(Buffer.from('old bytes'), 2), { size: 9, contentType: 'text/plain' });
    await assert.rejects(storage.put('disk/atomic.bin', failingStream(Buffer.from('new')), { size: 9, contentType: 'text/plain' }));
    assert.equal((await readAll(await storage.read('disk/atomic.bin'))).toString(), 'old bytes');
    assert.deepEqual(await storage.stat('disk/atomic.bin'), { size: 9, contentType: 'text/plain' });
  });

  test('a read in progress keeps seeing the old bytes while the key is replaced', async () => {
    const oldBytes = randomBytes(4 * 1024 * 1024);
    const newBytes = randomBytes(1000);
    await storage.put('disk/live.bin', inChunks(oldBytes, 65536), { size: oldBytes.length, contentType: 'video/mp4' });
    const reading = await storage.read('disk/live.bin');
    const chunks: Buffer[] = [];
    const iterator = reading[Symbol.asyncIterator]();
    const first = await iterator.next();
    chunks.push(first.value as Buffer);
    assert.ok(chunks[0].length < oldBytes.length, 'first chunk must not be the whole file');

    await storage.put('disk/live.bin', inChunks(newBytes, 100), { size: newBytes.length, contentType: 'video/mp4' });
    assert.deepEqual(await readAll(await storage.read('disk/live.bin')), newBytes);

    for (let next = await iterator.next(); !next.done; next = await iterator.next()) chunks.push(next.value as Buffer);
    assert.deepEqual(Buffer.concat(chunks), oldBytes);
  });

  test('delete and deletePrefix prune folders they leave empty', async () => {
    await storage.put('prune/one/two/x.bin', inChunks(Buffer.from('x'), 1), { size: 1, contentType: 'text/plain' });
    await storage.put('prune/keep.bin', inChunks(Buffer.from('k'), 1), { size: 1, contentType: 'text/plain' });
    await storage.delete('prune/one/two/x.bin');
    assert.deepEqual(await readdir(join(root, 'objects', 'prune')), ['keep.bin']);
    assert.deepEqual(await readdir(join(root, 'meta', 'prune')), ['keep.bin']);
    await storage.put('prune/sub/y.bin', inChunks(Buffer.from('y'), 1), { size: 1, contentType: 'text/plain' });
    await storage.deletePrefix('prune/sub/');
    assert.deepEqual(await readdir(join(root, 'objects', 'prune')), ['keep.bin']);
  });

  test('a key naming a folder of other keys is not an object', async () => {
    await storage.put('folder/inside.bin', inChunks(Buffer.from('i'), 1), { size: 1, contentType: 'text/plain' });
    assert.equal(await storage.stat('folder'), null);
    await assert.rejects(storage.read('folder'), { name: 'StorageNotFound' });
    await storage.delete('folder');
    assert.equal((await storage.stat('folder/inside.bin'))?.size, 1);
  });

  test('deletePrefix refuses an empty prefix or one with ".." segments', async () => {
    await assert.rejects(storage.deletePrefix(''));
    await assert.rejects(storage.deletePrefix('../'));
    await assert.rejects(storage.deletePrefix('a/../../'));
    await assert.rejects(storage.deletePrefix('/abs'));
  });

  test('URLs: public URL encodes each segment; presign checks the ttl', async () => {
    assert.equal(storage.publicUrl('public/a b/c#d?.mp4'), 'http://files.test/storage/public/a%20b/c%23d%3F.mp4');
    assert.throws(() => storage.publicUrl('a/../b'));
    for (const ttl of [0, -1, 1.5, 604801, Number.NaN]) {
      await assert.rejects(storage.presignGet('a/b.mp4', ttl), RangeError, String(ttl));
    }
    const url = new URL(await storage.presignPut('a/b.mp4', 604800));
    assert.match(url.searchParams.get('X-Signature') ?? '', /^[0-9a-f]{64}$/);
  });

  test('the constructor refuses a short signing key', () => {
    assert.throws(() => new LocalStorage({ root, publicBaseUrl: 'http://x', signingKey: 'short' }));
  });
});

describe('local storage: multipart uploads', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  let fx: LocalFixture;
  before(async () => {
    fx = await startLocal({ clock: () => now, maxPartBytes: 200_000 });
  });
  after(async () => {
    await fx?.close();
  });

  const md5 = (data: Buffer) => createHash('md5').update(data).digest('hex');
  /** A part's ETag: CRC-32 and size in hex. */
  const partEtag = (data: Buffer) => `${crc32(data).toString(16).padStart(8, '0')}-${data.length.toString(16)}`;

  async function sendPart(key: string, uploadId: string, partNumber: number, data: Buffer, headers: Record<string, string> = {}) {
    const url = await fx.storage.presignUploadPart(key, uploadId, partNumber, 600, data.length);
    return rawPut(url, data, { 'Content-Length': String(data.length), ...headers });
  }

  test('parts are written in place into uploads/<id>/data; completion renames that file into place', async () => {
    const partBytes = TEST_MIN_PART_BYTES;
    const uploadId = await fx.storage.createMultipartUpload('mp/disk.mp4', 'video/mp4', partBytes);
    assert.match(uploadId, /^[A-Za-z0-9_-]{32}$/);
    const dir = join(fx.root, 'uploads', uploadId);
    const record = JSON.parse(await readFile(join(dir, 'upload.json'), 'utf8'));
    assert.deepEqual(record, { key: 'mp/disk.mp4', contentType: 'video/mp4', createdAt: new Date(now).toISOString(), partBytes });

    const part1 = randomBytes(partBytes);
    const part2 = randomBytes(10);
    // The last part first: it lands at its offset all the same.
    assert.equal((await sendPart('mp/disk.mp4', uploadId, 2, part2)).status, 200);
    assert.equal((await sendPart('mp/disk.mp4', uploadId, 1, part1)).status, 200);
    assert.deepEqual(await readFile(join(dir, 'data')), Buffer.concat([part1, part2]));
    assert.deepEqual((await readdir(dir)).sort(), ['1.part', '2.part', 'data', 'upload.json']);
    assert.equal(await readFile(join(dir, '1.part'), 'utf8'), `${partEtag(part1)} ${partBytes}`);
    const dataInode = (await stat(join(dir, 'data'))).ino;

    await fx.storage.completeMultipartUpload('mp/disk.mp4', uploadId, [
      { partNumber: 1, etag: partEtag(part1) },
      { partNumber: 2, etag: partEtag(part2) },
    ]);
    await assert.rejects(stat(dir), { code: 'ENOENT' });
    assert.deepEqual(await readdir(join(fx.root, 'tmp')), []);
    const object = join(fx.root, 'objects', 'mp', 'disk.mp4');
    assert.deepEqual(await readFile(object), Buffer.concat([part1, part2]));
    assert.equal((await stat(object)).ino, dataInode, 'the object is the data file itself, not a copy');
  });

  test('completion keeps only the listed parts: bytes of a later part sent but not listed are cut off', async () => {
    const partBytes = TEST_MIN_PART_BYTES;
    const uploadId = await fx.storage.createMultipartUpload('mp/fewer.bin', 'application/octet-stream', partBytes);
    const part1 = randomBytes(partBytes);
    await sendPart('mp/fewer.bin', uploadId, 1, part1);
    await sendPart('mp/fewer.bin', uploadId, 2, randomBytes(5000));
    assert.deepEqual(await fx.storage.completeMultipartUpload('mp/fewer.bin', uploadId, [{ partNumber: 1, etag: partEtag(part1) }]), {
      size: partBytes,
    });
    assert.deepEqual(await readAll(await fx.storage.read('mp/fewer.bin')), part1);
  });

  test('every part but the last must be exactly the upload part size, and no part may be larger', async () => {
    const partBytes = TEST_MIN_PART_BYTES + 10;
    const uploadId = await fx.storage.createMultipartUpload('mp/gap.bin', 'application/octet-stream', partBytes);
    const short = randomBytes(TEST_MIN_PART_BYTES); // above the minimum, below the part size: a gap
    const last = randomBytes(3);
    await sendPart('mp/gap.bin', uploadId, 1, short);
    await sendPart('mp/gap.bin', uploadId, 2, last);
    await assert.rejects(
      fx.storage.completeMultipartUpload('mp/gap.bin', uploadId, [
        { partNumber: 1, etag: partEtag(short) },
        { partNumber: 2, etag: partEtag(last) },
      ]),
      { name: 'MultipartError', message: /part 1 is 65536 bytes; every part but the last must be 65546 bytes/ },
    );
    assert.equal(await fx.storage.stat('mp/gap.bin'), null);
    // A URL signed for more than the part size (the API never makes one) cannot write into the next part.
    const tooLarge = await sendPart('mp/gap.bin', uploadId, 1, randomBytes(partBytes + 1));
    assert.equal(tooLarge.status, 409, tooLarge.body);
    assert.match(JSON.parse(tooLarge.body).detail, /more than the upload's part size of 65546 bytes/);
    await fx.storage.abortMultipartUpload('mp/gap.bin', uploadId);
  });

  test('one part is written by one request at a time, and completion waits for no part in flight', async () => {
    const key = 'mp/busy-part.bin';
    const uploadId = await fx.storage.createMultipartUpload(key, 'application/octet-stream', 100);
    const first = Buffer.alloc(50, 1);
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const slow = fx.storage.receivePart(
      key,
      uploadId,
      1,
      Readable.from(
        (async function* () {
          yield first;
          await held;
          yield Buffer.alloc(50, 2);
        })(),
      ),
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await sendPart(key, uploadId, 1, randomBytes(100));
    assert.equal(second.status, 409, second.body);
    assert.match(JSON.parse(second.body).detail, /part 1 is being uploaded by another request/);
    await assert.rejects(fx.storage.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag: 'x' }]), {
      name: 'MultipartConflict',
      message: /part 1 is still being uploaded/,
    });
    finish();
    const etag = await slow;
    assert.equal(etag, partEtag(Buffer.concat([first, Buffer.alloc(50, 2)])));
    await fx.storage.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag }]);
    assert.equal((await readAll(await fx.storage.read(key))).length, 100);
  });

  test('a part re-sent and dropped half-way counts as missing, not as its earlier bytes', async () => {
    const key = 'mp/dropped.bin';
    const uploadId = await fx.storage.createMultipartUpload(key, 'application/octet-stream', 100);
    const good = randomBytes(100);
    await sendPart(key, uploadId, 1, good);
    await assert.rejects(fx.storage.receivePart(key, uploadId, 1, failingStream(randomBytes(40)), 100), /connection reset/);
    assert.deepEqual(await fx.storage.listParts(key, uploadId), []);
    await assert.rejects(fx.storage.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag: partEtag(good) }]), {
      message: /part 1 is missing/,
    });
    await sendPart(key, uploadId, 1, good);
    await fx.storage.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag: partEtag(good) }]);
    assert.deepEqual(await readAll(await fx.storage.read(key)), good);
  });

  test('a completion that cannot publish (the key is a folder) leaves the upload whole and usable', async () => {
    await fx.storage.put('mp/clash/inside.txt', Readable.from([Buffer.from('x')]), { size: 1, contentType: 'text/plain' });
    const uploadId = await fx.storage.createMultipartUpload('mp/clash', 'application/octet-stream', 100);
    const part = randomBytes(60);
    await sendPart('mp/clash', uploadId, 1, part);
    await assert.rejects(fx.storage.completeMultipartUpload('mp/clash', uploadId, [{ partNumber: 1, etag: partEtag(part) }]));
    assert.deepEqual(await fx.storage.listParts('mp/clash', uploadId), [{ partNumber: 1, etag: `"${partEtag(part)}"`, size: 60 }]);
    assert.deepEqual(await readFile(join(fx.root, 'uploads', uploadId, 'data')), part);
    await fx.storage.delete('mp/clash/inside.txt');
    await fx.storage.completeMultipartUpload('mp/clash', uploadId, [{ partNumber: 1, etag: partEtag(part) }]);
    assert.deepEqual(await readAll(await fx.storage.read('mp/clash')), part);
  });

  test('an upload started by an earlier version (parts in files of their own) is refused clearly and can be aborted', async () => {
    const uploadId = 'L'.repeat(32);
    const dir = join(fx.root, 'uploads', uploadId);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'upload.json'), JSON.stringify({ key: 'mp/old.bin', contentType: 'text/plain', createdAt: new Date(now) }));
    await writeFile(join(dir, '1'), 'old part');
    await writeFile(join(dir, '1.md5'), md5(Buffer.from('old part')));
    const res = await sendPart('mp/old.bin', uploadId, 2, Buffer.from('more'));
    assert.equal(res.status, 409, res.body);
    assert.match(JSON.parse(res.body).detail, /started by an earlier version/);
    await assert.rejects(fx.storage.completeMultipartUpload('mp/old.bin', uploadId, [{ partNumber: 1, etag: 'x' }]), {
      name: 'MultipartConflict',
      message: /start it again/,
    });
    await fx.storage.abortMultipartUpload('mp/old.bin', uploadId);
    await assert.rejects(stat(dir), { code: 'ENOENT' });
  });

  test('a part PUT needs Content-Length, an exact body and a size within the part cap', async () => {
    const uploadId = await fx.storage.createMultipartUpload('mp/limits.bin', 'application/octet-stream', TEST_PART_BYTES);
    const url = await fx.storage.presignUploadPart('mp/limits.bin', uploadId, 1, 600, 200_000);
    const chunked = await rawPut(url, Buffer.from('streamed'), { 'Transfer-Encoding': 'chunked' }, true);
    assert.equal(chunked.status, 411);
    const tooBig = await rawPut(url, randomBytes(200_001), { 'Content-Length': '200001' });
    assert.equal(tooBig.status, 413);
    assert.equal(typeof JSON.parse(tooBig.body).detail, 'string');
    const atCap = await rawPut(url, randomBytes(200_000), { 'Content-Length': '200000' });
    assert.equal(atCap.status, 200);
    assert.deepEqual(
      (await fx.storage.listParts('mp/limits.bin', uploadId)).map((p) => p.size),
      [200_000],
    );
    await fx.storage.abortMultipartUpload('mp/limits.bin', uploadId);
  });

  test('attack: a 100-byte part URL refuses 40 MiB before reading it; the refusal keeps nothing', async () => {
    const key = 'mp/attack.bin';
    const uploadId = await fx.storage.createMultipartUpload(key, 'application/octet-stream', TEST_PART_BYTES);
    const url = await fx.storage.presignUploadPart(key, uploadId, 1, 600, 100);
    const dir = join(fx.root, 'uploads', uploadId);
    // Under the route's 200 000-byte cap too, so only the signed part size can refuse it.
    for (const size of [40 * 1024 * 1024, 150_000, 101]) {
      const res = await rawPut(url, randomBytes(size), { 'Content-Length': String(size) });
      assert.equal(res.status, 413, `${size}: ${res.body}`);
      assert.match(JSON.parse(res.body).detail, /Part 1 is 100 bytes/);
      assert.deepEqual((await readdir(dir)).sort(), ['data', 'upload.json'], `${size} bytes left something behind`);
    }
    const short = await rawPut(url, randomBytes(99), { 'Content-Length': '99' });
    assert.equal(short.status, 400);
    assert.match(JSON.parse(short.body).detail, /exactly 100 bytes/);
    assert.deepEqual((await readdir(dir)).sort(), ['data', 'upload.json']);
    assert.deepEqual(await readdir(join(fx.root, 'tmp')), []);
    assert.equal((await sendPart(key, uploadId, 1, randomBytes(100))).status, 200);
    await fx.storage.abortMultipartUpload(key, uploadId);
  });

  test('attack: the part size is signed; raising it in the URL, or dropping it, is refused', async () => {
    const key = 'mp/bent-size.bin';
    const uploadId = await fx.storage.createMultipartUpload(key, 'application/octet-stream', TEST_PART_BYTES);
    const url = new URL(await fx.storage.presignUploadPart(key, uploadId, 1, 600, 100));
    assert.equal(url.searchParams.get('X-Part-Size'), '100');
    const raised = new URL(url);
    raised.searchParams.set('X-Part-Size', String(40 * 1024 * 1024));
    const dropped = new URL(url);
    dropped.searchParams.delete('X-Part-Size');
    for (const bent of [raised, dropped]) {
      const res = await rawPut(bent.toString(), randomBytes(150_000), { 'Content-Length': '150000' });
      assert.equal(res.status, 403, bent.toString());
    }
    assert.deepEqual(await fx.storage.listParts(key, uploadId), []);
    await fx.storage.abortMultipartUpload(key, uploadId);
  });

  test('what the storage writes is private: files 0600, folders 0700', async () => {
    const modes = async (path: string) => (await stat(path)).mode & 0o777;
    await fx.storage.put('perm/a/b.txt', Readable.from([Buffer.from('hi')]), { size: 2, contentType: 'text/plain' });
    assert.equal(await modes(join(fx.root, 'objects', 'perm', 'a', 'b.txt')), 0o600);
    assert.equal(await modes(join(fx.root, 'meta', 'perm', 'a', 'b.txt')), 0o600);
    for (const dir of ['objects/perm', 'objects/perm/a', 'meta/perm/a', 'tmp']) assert.equal(await modes(join(fx.root, dir)), 0o700, dir);

    const uploadId = await fx.storage.createMultipartUpload('perm/up.bin', 'application/octet-stream', TEST_PART_BYTES);
    assert.equal(await modes(join(fx.root, 'uploads', uploadId)), 0o700);
    assert.equal(await modes(join(fx.root, 'uploads', uploadId, 'upload.json')), 0o600);
    const part = Buffer.from('part');
    assert.equal((await sendPart('perm/up.bin', uploadId, 1, part)).status, 200);
    assert.equal(await modes(join(fx.root, 'uploads', uploadId, 'data')), 0o600);
    assert.equal(await modes(join(fx.root, 'uploads', uploadId, '1.part')), 0o600);
    await fx.storage.completeMultipartUpload('perm/up.bin', uploadId, [{ partNumber: 1, etag: partEtag(part) }]);
    assert.equal(await modes(join(fx.root, 'objects', 'perm', 'up.bin')), 0o600);
  });

  test('a part re-sent replaces the earlier one', async () => {
    const uploadId = await fx.storage.createMultipartUpload('mp/resend.bin', 'application/octet-stream', TEST_PART_BYTES);
    await sendPart('mp/resend.bin', uploadId, 1, Buffer.from('first try'));
    const second = Buffer.from('second try');
    assert.equal((await sendPart('mp/resend.bin', uploadId, 1, second)).status, 200);
    assert.deepEqual(await fx.storage.listParts('mp/resend.bin', uploadId), [
      { partNumber: 1, etag: `"${partEtag(second)}"`, size: second.length },
    ]);
    await fx.storage.completeMultipartUpload('mp/resend.bin', uploadId, [{ partNumber: 1, etag: partEtag(second) }]);
    assert.equal((await readAll(await fx.storage.read('mp/resend.bin'))).toString(), 'second try');
  });

  test('an upload belongs to its key: a part URL for another key and a made-up upload id answer 404', async () => {
    const uploadId = await fx.storage.createMultipartUpload('mp/owner.bin', 'application/octet-stream', TEST_PART_BYTES);
    const foreign = await sendPart('mp/intruder.bin', uploadId, 1, Buffer.from('x'));
    assert.equal(foreign.status, 404);
    const madeUp = await sendPart('mp/owner.bin', 'A'.repeat(32), 1, Buffer.from('x'));
    assert.equal(madeUp.status, 404);
    await assert.rejects(fx.storage.listParts('mp/intruder.bin', uploadId), UploadNotFound);
    await assert.rejects(fx.storage.completeMultipartUpload('mp/intruder.bin', uploadId, [{ partNumber: 1, etag: 'x' }]), {
      name: 'UploadNotFound',
    });
    await fx.storage.abortMultipartUpload('mp/intruder.bin', uploadId); // not its upload: a no-op
    assert.deepEqual(await fx.storage.listParts('mp/owner.bin', uploadId), []);
    await fx.storage.abortMultipartUpload('mp/owner.bin', uploadId);
  });

  test('upload ids that are not ours cannot reach outside uploads/', async () => {
    for (const uploadId of ['../tmp', '..', '../../objects', 'a/b', '']) {
      await assert.rejects(fx.storage.listParts('mp/x.bin', uploadId), UploadNotFound, uploadId);
      await assert.rejects(fx.storage.presignUploadPart('mp/x.bin', uploadId, 1, 60, 1), UploadNotFound, uploadId);
      await fx.storage.abortMultipartUpload('mp/x.bin', uploadId);
    }
    const url = new URL(await fx.storage.presignPut('mp/x.bin', 600));
    url.searchParams.set('uploadId', '../../objects');
    url.searchParams.set('partNumber', '1');
    const res = await rawPut(url.toString(), Buffer.from('x'), { 'Content-Length': '1' });
    assert.equal(res.status, 403);
    assert.ok((await readdir(fx.root)).includes('objects'));
  });

  test('the minimum part size is a constructor option, 5 MiB by default', async () => {
    const root = await mkdtemp(join(tmpdir(), 'local-storage-min-part-'));
    try {
      const storage = new LocalStorage({ root, publicBaseUrl: 'http://files.test', signingKey: SIGNING_KEY });
      const uploadId = await storage.createMultipartUpload('a/b.bin', 'application/octet-stream', 5 * 1024 * 1024 - 1);
      const body = randomBytes(5 * 1024 * 1024 - 1);
      const etag = await storage.receivePart('a/b.bin', uploadId, 1, inChunks(body, 1 << 20), body.length);
      await storage.receivePart('a/b.bin', uploadId, 2, inChunks(Buffer.from('end'), 3), 3);
      await assert.rejects(
        storage.completeMultipartUpload('a/b.bin', uploadId, [
          { partNumber: 1, etag },
          { partNumber: 2, etag: partEtag(Buffer.from('end')) },
        ]),
        { name: 'MultipartError', message: /part 1 is 5242879 bytes; every part but the last must be at least 5242880 bytes/ },
      );
      assert.throws(() => new LocalStorage({ root, publicBaseUrl: 'http://x', signingKey: SIGNING_KEY, minPartBytes: 0 }));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('local storage: no second copy, and a full disk', () => {
  let fx: LocalFixture;
  before(async () => {
    fx = await startLocal();
  });
  after(async () => {
    await fx?.close();
  });

  test('putFile on the same filesystem links the file: the stored object is the same inode, private', async () => {
    const source = join(fx.root, 'source.bin');
    await writeFile(source, randomBytes(1000), { mode: 0o644 });
    assert.deepEqual(await fx.storage.putFile('copy/a.bin', source, 'application/octet-stream'), { size: 1000 });
    const [stored, original] = [await stat(join(fx.root, 'objects', 'copy', 'a.bin')), await stat(source)];
    assert.equal(stored.ino, original.ino);
    assert.equal(stored.mode & 0o777, 0o600);
    assert.deepEqual(await readdir(join(fx.root, 'tmp')), []);
  });

  test('a hand-off PUT names a file in the hand-off folder: adopted without a copy, then gone from there', async () => {
    const dir = await fx.storage.handoffDir();
    const name = randomBytes(24).toString('base64url');
    const data = randomBytes(5000);
    await writeFile(join(dir, name), data, { mode: 0o644 });
    const inode = (await stat(join(dir, name))).ino;
    const url = await fx.storage.presignPut('handoff/out.mp4', 60);
    const res = await rawPut(url, Buffer.alloc(0), {
      'Content-Length': '0',
      'Content-Type': 'video/mp4',
      [HANDOFF_HEADER]: name,
      [HANDOFF_SIZE_HEADER]: String(data.length),
    });
    assert.equal(res.status, 200, res.body);
    const stored = await stat(join(fx.root, 'objects', 'handoff', 'out.mp4'));
    assert.equal(stored.ino, inode);
    assert.equal(stored.mode & 0o777, 0o600);
    assert.deepEqual(await fx.storage.stat('handoff/out.mp4'), { size: data.length, contentType: 'video/mp4' });
    assert.deepEqual(await readdir(dir), []);
  });

  test('attack: a hand-off PUT cannot adopt anything but a plain, single-named file of its size in that folder', async () => {
    const dir = await fx.storage.handoffDir();
    const outside = join(fx.root, 'outside.bin');
    await writeFile(outside, 'secret', { mode: 0o644 });
    const linked = randomBytes(24).toString('base64url');
    await link(outside, join(dir, linked));
    const sized = randomBytes(24).toString('base64url');
    await writeFile(join(dir, sized), 'abc');
    for (const [name, size, why] of [
      ['../../outside.bin', 6, /invalid hand-off name/],
      [randomBytes(24).toString('base64url'), 6, /no such hand-off file/],
      [linked, 6, /not a plain file/],
      [sized, 4, /has 3 bytes, not 4/],
    ] as const) {
      await assert.rejects(fx.storage.adoptHandoff('handoff/x.bin', name, size, 'text/plain'), (err: Error) => {
        assert.ok(err instanceof HandoffRefused);
        assert.match(err.message, why);
        return true;
      });
    }
    // The hard-linked file kept its mode and owner, and no refused file was stored.
    assert.equal((await stat(outside)).mode & 0o777, 0o644);
    assert.equal(await fx.storage.stat('handoff/x.bin'), null);
    // Each refused hand-off file is gone (the link, not the file it named).
    assert.deepEqual(await readdir(dir), []);
    assert.equal(await readFile(outside, 'utf8'), 'secret');
    // Over HTTP: 400 with the reason; an unsigned hand-off PUT is 403 before anything is looked at.
    await link(outside, join(dir, linked));
    const url = await fx.storage.presignPut('handoff/y.bin', 60);
    const refused = await rawPut(url, Buffer.alloc(0), { 'Content-Length': '0', [HANDOFF_HEADER]: linked, [HANDOFF_SIZE_HEADER]: '6' });
    assert.equal(refused.status, 400);
    assert.match(refused.body, /not a plain file/);
    const unsigned = await rawPut(`${fx.baseUrl}/storage/handoff/y.bin`, Buffer.alloc(0), {
      'Content-Length': '0',
      [HANDOFF_HEADER]: linked,
      [HANDOFF_SIZE_HEADER]: '6',
    });
    assert.equal(unsigned.status, 403);
  });

  test('lastUploadActivity: null before any part, the time of the last write after', async () => {
    const uploadId = await fx.storage.createMultipartUpload('idle/a.bin', 'application/octet-stream', TEST_PART_BYTES);
    assert.equal(await fx.storage.lastUploadActivity('idle/a.bin', uploadId), null);
    await fx.storage.receivePart('idle/a.bin', uploadId, 1, inChunks(Buffer.from('abc'), 3), 3);
    // A part written an hour after the start (the data file's mtime moves with every write).
    const later = new Date(Math.floor(Date.now() / 1000) * 1000 + 3600_000);
    await utimes(join(fx.root, 'uploads', uploadId, 'data'), later, later);
    assert.equal((await fx.storage.lastUploadActivity('idle/a.bin', uploadId))?.getTime(), later.getTime());
    assert.equal(await fx.storage.lastUploadActivity('idle/other.bin', uploadId), null);
    await fx.storage.abortMultipartUpload('idle/a.bin', uploadId);
    assert.equal(await fx.storage.lastUploadActivity('idle/a.bin', uploadId), null);
  });
});

describe('local storage: the disk reserve', () => {
  const GiB = 1024 ** 3;
  let fx: LocalFixture;
  before(async () => {
    // A reserve of all but 512 MiB of the free space: a 1 GiB body cannot fit, 3 bytes can, with room
    // for what other processes on the machine write meanwhile.
    const root = await mkdtemp(join(tmpdir(), 'local-storage-probe-'));
    const free = await freeBytes(root);
    await rm(root, { recursive: true });
    fx = await startLocal({ reserveBytes: Math.max(0, free - GiB / 2), maxPartBytes: 2 * GiB, maxUploadBytes: 2 * GiB });
  });
  after(async () => {
    await fx?.close();
  });

  /** Announces `size` bytes, sends a few, and resolves with the answer (then drops the request). */
  function announce(url: string, size: number): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request(url, { method: 'PUT', headers: { 'Content-Length': String(size) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
          req.destroy();
        });
      });
      req.on('error', reject);
      req.write(Buffer.alloc(1024));
    });
  }

  test('a part or PUT that would eat into the reserve is a 507 with a detail, before its body is read', async () => {
    const uploadId = await fx.storage.createMultipartUpload('full/a.bin', 'application/octet-stream', GiB);
    const part = await announce(await fx.storage.presignUploadPart('full/a.bin', uploadId, 1, 600, GiB), GiB);
    assert.equal(part.status, 507);
    assert.match(JSON.parse(part.body).detail, /ran out of disk space and could not store part 1 \(1073741824 bytes\): \d+ bytes are free/);
    assert.deepEqual(await fx.storage.listParts('full/a.bin', uploadId), []);
    const put = await announce(await fx.storage.presignPut('full/b.bin', 60), GiB);
    assert.equal(put.status, 507);
    assert.match(JSON.parse(put.body).detail, /could not store the file \(1073741824 bytes\)/);
    assert.equal(await fx.storage.stat('full/b.bin'), null);
    // What fits is stored.
    const small = await rawPut(await fx.storage.presignPut('full/c.bin', 60), Buffer.from('abc'), { 'Content-Length': '3' });
    assert.equal(small.status, 200, small.body);
  });
});

/** Yields some bytes, then fails like a dropped upload. */
function failingStream(prefix: Buffer): Readable {
  return Readable.from(
    (async function* () {
      yield prefix;
      throw new Error('connection reset');
    })(),
  );
}
