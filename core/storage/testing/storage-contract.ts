// Behaviour every Storage backend must show, checked only through the Storage interface and plain
// fetch() on the URLs it returns. A backend's test file calls storageContract() with a factory.
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { Storage } from '../storage.ts';
import { MultipartError, StorageNotFound } from '../storage.ts';

export interface ContractBackend {
  storage: Storage;
  /** Origin (and path prefix) every URL the storage hands out starts with. */
  baseUrl: string;
  close(): Promise<void>;
}

export interface ContractContext {
  /** Milliseconds since the epoch. The backend must sign (and, if it can, verify) URLs with it. */
  clock: () => number;
}

export interface ContractOptions {
  /** publicUrl() of a key outside public/ answers 403. Default true. */
  refusesPublicUrlOfPrivateKey?: boolean;
  /**
   * publicUrl() of a public/ key serves the bytes without a signature. Default true; a private S3
   * bucket does not (a CDN or bucket policy in front of it does, which a test server lacks).
   */
  servesPublicUrls?: boolean;
  /** Smallest size the backend accepts for every multipart part but the last. Default 5 MiB (S3's). */
  minPartBytes?: number;
}

export function storageContract(
  name: string,
  make: (context: ContractContext) => Promise<ContractBackend>,
  options: ContractOptions = {},
): void {
  describe(`storage contract: ${name}`, () => {
    let clockOffsetMs = 0;
    let backend: ContractBackend;
    let storage: Storage;
    let scratchDir: string;

    before(async () => {
      backend = await make({ clock: () => Date.now() + clockOffsetMs });
      storage = backend.storage;
      scratchDir = await mkdtemp(join(tmpdir(), 'storage-contract-'));
    });
    after(async () => {
      try {
        await backend?.close();
      } finally {
        if (scratchDir) await rm(scratchDir, { recursive: true, force: true });
      }
    });

    /** A fresh folder per test, so tests never see each other's objects. */
    const prefix = (): string => `contract/${randomUUID()}`;

    async function putBytes(key: string, data: Buffer, contentType = 'application/octet-stream'): Promise<void> {
      await storage.put(key, inChunks(data, 7919), { size: data.length, contentType });
    }

    test('put, stat and read return exactly the stored bytes', async () => {
      const key = `${prefix()}/clip.mp4`;
      const data = randomBytes(200_000);
      await putBytes(key, data, 'video/mp4');
      assert.deepEqual(await storage.stat(key), { size: data.length, contentType: 'video/mp4' });
      assert.deepEqual(await readAll(await storage.read(key)), data);
    });

    test('an empty object can be stored and read', async () => {
      const key = `${prefix()}/empty.txt`;
      await putBytes(key, Buffer.alloc(0), 'text/plain');
      assert.equal((await storage.stat(key))?.size, 0);
      assert.equal((await readAll(await storage.read(key))).length, 0);
    });

    test('put replaces an existing object', async () => {
      const key = `${prefix()}/out.bin`;
      await putBytes(key, Buffer.from('first version'));
      await putBytes(key, Buffer.from('v2'), 'text/plain');
      assert.deepEqual(await storage.stat(key), { size: 2, contentType: 'text/plain' });
      assert.equal((await readAll(await storage.read(key))).toString(), 'v2');
    });

    test('put with a body shorter or longer than size is rejected and stores nothing', async () => {
      const key = `${prefix()}/wrong-size.bin`;
      const data = randomBytes(1000);
      await assert.rejects(storage.put(key, inChunks(data, 100), { size: 1001, contentType: 'application/octet-stream' }));
      assert.equal(await storage.stat(key), null);
      await assert.rejects(storage.put(key, inChunks(data, 100), { size: 999, contentType: 'application/octet-stream' }));
      assert.equal(await storage.stat(key), null);
    });

    test('a failed put leaves the previous version in place', async () => {
      const key = `${prefix()}/kept.bin`;
      await putBytes(key, Buffer.from('original'));
      await assert.rejects(storage.put(key, inChunks(randomBytes(50), 10), { size: 60, contentType: 'text/plain' }));
      assert.equal((await readAll(await storage.read(key))).toString(), 'original');
    });

    test('putFile stores a local file and returns its size', async () => {
      const key = `${prefix()}/from-file.wav`;
      const data = randomBytes(12_345);
      const path = join(scratchDir, `${randomUUID()}.wav`);
      await writeFile(path, data);
      assert.deepEqual(await storage.putFile(key, path, 'audio/wav'), { size: data.length });
      assert.deepEqual(await storage.stat(key), { size: data.length, contentType: 'audio/wav' });
      assert.deepEqual(await readAll(await storage.read(key)), data);
    });

    test('read with a range returns exactly those bytes, clamped to the end', async () => {
      const key = `${prefix()}/ranged.bin`;
      const data = randomBytes(10_000);
      await putBytes(key, data);
      assert.deepEqual(await readAll(await storage.read(key, { start: 0, end: 0 })), data.subarray(0, 1));
      assert.deepEqual(await readAll(await storage.read(key, { start: 1234, end: 5678 })), data.subarray(1234, 5679));
      assert.deepEqual(await readAll(await storage.read(key, { start: 9990, end: 20_000 })), data.subarray(9990));
    });

    test('stat of a missing object is null and read rejects with StorageNotFound', async () => {
      const key = `${prefix()}/missing.mp4`;
      assert.equal(await storage.stat(key), null);
      await assert.rejects(storage.read(key), StorageNotFound);
    });

    test('delete removes an object; deleting a missing one is fine', async () => {
      const key = `${prefix()}/gone.bin`;
      await putBytes(key, Buffer.from('bye'));
      await storage.delete(key);
      assert.equal(await storage.stat(key), null);
      await assert.rejects(storage.read(key), StorageNotFound);
      await storage.delete(key);
    });

    test('deletePrefix removes every key starting with the prefix and nothing else', async () => {
      const p = prefix();
      const keys = [`${p}/x/1.bin`, `${p}/x/deep/2.bin`, `${p}/xy/3.bin`, `${p}/y/4.bin`, `${p}/z`];
      for (const key of keys) await putBytes(key, Buffer.from(key));

      await storage.deletePrefix(`${p}/x/`);
      assert.equal(await storage.stat(`${p}/x/1.bin`), null);
      assert.equal(await storage.stat(`${p}/x/deep/2.bin`), null);
      assert.notEqual(await storage.stat(`${p}/xy/3.bin`), null);

      // Plain string prefix, as in S3: 'x' also matches 'xy/...'.
      await storage.deletePrefix(`${p}/x`);
      assert.equal(await storage.stat(`${p}/xy/3.bin`), null);
      assert.notEqual(await storage.stat(`${p}/y/4.bin`), null);

      // 'z/' is a folder prefix: it does not match the object named 'z'.
      await storage.deletePrefix(`${p}/z/`);
      assert.notEqual(await storage.stat(`${p}/z`), null);

      await storage.deletePrefix(`${p}/`);
      assert.equal(await storage.stat(`${p}/y/4.bin`), null);
      assert.equal(await storage.stat(`${p}/z`), null);
    });

    test('deletePrefix finds keys with characters that need escaping', async () => {
      const p = prefix();
      const odd = [`${p}/odd/C++ & <talk> 100% é.mp4`, `${p}/odd/a+b.bin`, `${p}/odd/%41%2B.bin`, `${p}/odd/q?x=1#y.bin`];
      for (const key of odd) await putBytes(key, Buffer.from(key));
      await putBytes(`${p}/odd-kept/a+b.bin`, Buffer.from('kept'));
      await storage.deletePrefix(`${p}/odd/a+`);
      assert.equal(await storage.stat(`${p}/odd/a+b.bin`), null);
      assert.notEqual(await storage.stat(odd[0]), null);
      await storage.deletePrefix(`${p}/odd/`);
      for (const key of odd) assert.equal(await storage.stat(key), null, key);
      assert.notEqual(await storage.stat(`${p}/odd-kept/a+b.bin`), null);
    });

    test('keys that could escape or are not plain relative paths are rejected by put', async () => {
      const p = prefix();
      const bad = [
        `${p}/../escape.bin`,
        '../escape.bin',
        `/${p}/abs.bin`,
        `${p}\\win.bin`,
        `${p}//double.bin`,
        `${p}/./dot.bin`,
        `${p}/nul\u0000.bin`,
        `${p}/new\nline.bin`,
        `${p}/`,
        '',
        `${p}/${'a'.repeat(2000)}`,
      ];
      for (const key of bad) {
        await assert.rejects(
          storage.put(key, Readable.from([Buffer.from('x')]), { size: 1, contentType: 'text/plain' }),
          `put accepted ${JSON.stringify(key)}`,
        );
      }
    });

    test('presignPut gives a URL that accepts one HTTP PUT of the object', async () => {
      const key = `${prefix()}/upload.mp4`;
      const data = randomBytes(50_000);
      const url = await storage.presignPut(key, 600);
      assert.ok(url.startsWith(backend.baseUrl), url);
      const res = await fetch(url, { method: 'PUT', body: data, headers: { 'Content-Type': 'video/mp4' } });
      await res.arrayBuffer();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('etag'), `"${createHash('md5').update(data).digest('hex')}"`);
      assert.deepEqual(await storage.stat(key), { size: data.length, contentType: 'video/mp4' });
      assert.deepEqual(await readAll(await storage.read(key)), data);
    });

    test('presignGet gives a URL that serves the bytes and honours Range', async () => {
      const key = `${prefix()}/my clip é+1.mp4`;
      const data = randomBytes(30_000);
      await putBytes(key, data, 'video/mp4');
      const url = await storage.presignGet(key, 600);
      assert.ok(url.startsWith(backend.baseUrl), url);
      // The spec wants the file name at the end of every URL.
      assert.ok(new URL(url).pathname.endsWith(`/${encodeURIComponent('my clip é+1.mp4')}`), url);

      const full = await fetch(url);
      assert.equal(full.status, 200);
      assert.equal(full.headers.get('content-type'), 'video/mp4');
      assert.equal(full.headers.get('content-length'), String(data.length));
      assert.deepEqual(Buffer.from(await full.arrayBuffer()), data);

      const part = await fetch(url, { headers: { Range: 'bytes=100-199' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 100-199/${data.length}`);
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), data.subarray(100, 200));
    });

    if (options.servesPublicUrls ?? true) {
      test('publicUrl of a public/ key serves without a signature', async () => {
        const key = `public/${randomUUID()}/poster.png`;
        const data = randomBytes(4096);
        await putBytes(key, data, 'image/png');
        const url = storage.publicUrl(key);
        assert.ok(url.startsWith(backend.baseUrl), url);
        const res = await fetch(url);
        assert.equal(res.status, 200);
        assert.deepEqual(Buffer.from(await res.arrayBuffer()), data);
      });
    }

    if (options.refusesPublicUrlOfPrivateKey ?? true) {
      test('publicUrl of a key outside public/ is refused', async () => {
        const key = `${prefix()}/private.mp4`;
        await putBytes(key, Buffer.from('secret'), 'video/mp4');
        const res = await fetch(storage.publicUrl(key));
        await res.arrayBuffer();
        assert.equal(res.status, 403);
      });
    }

    test('expired presigned URLs are refused', async () => {
      const key = `${prefix()}/expired.mp4`;
      await putBytes(key, Buffer.from('old news'));
      clockOffsetMs = -2 * 3600_000;
      let getUrl: string;
      let putUrl: string;
      try {
        getUrl = await storage.presignGet(key, 60);
        putUrl = await storage.presignPut(`${key}.new`, 60);
      } finally {
        clockOffsetMs = 0;
      }
      const get = await fetch(getUrl);
      await get.arrayBuffer();
      assert.equal(get.status, 403);
      const put = await fetch(putUrl, { method: 'PUT', body: Buffer.from('late') });
      await put.arrayBuffer();
      assert.equal(put.status, 403);
      assert.equal(await storage.stat(`${key}.new`), null);
    });

    test('a presigned URL with a tampered signature or another key is refused', async () => {
      const p = prefix();
      await putBytes(`${p}/a.bin`, Buffer.from('file a'));
      await putBytes(`${p}/b.bin`, Buffer.from('file b'));
      const url = new URL(await storage.presignGet(`${p}/a.bin`, 600));

      const signatureParam = [...url.searchParams.keys()].find((k) => /signature/i.test(k));
      assert.ok(signatureParam, `no signature parameter in ${url}`);
      const tampered = new URL(url);
      const signature = url.searchParams.get(signatureParam) as string;
      tampered.searchParams.set(signatureParam, flipLastHexDigit(signature));
      const res1 = await fetch(tampered);
      await res1.arrayBuffer();
      assert.equal(res1.status, 403);

      const otherKey = new URL(url);
      otherKey.pathname = otherKey.pathname.replace(/a\.bin$/, 'b.bin');
      const res2 = await fetch(otherKey);
      await res2.arrayBuffer();
      assert.equal(res2.status, 403);

      const untouched = await fetch(url);
      assert.equal(Buffer.from(await untouched.arrayBuffer()).toString(), 'file a');
    });

    test('put of a large object (several put parts) stores exactly its bytes', async () => {
      // Above S3Storage's default 16 MiB put part, so it goes through a multipart put there.
      const key = `${prefix()}/large.bin`;
      const data = randomBytes(17 * 1024 * 1024 + 4321);
      await storage.put(key, inChunks(data, 1 << 20), { size: data.length, contentType: 'application/octet-stream' });
      assert.equal((await storage.stat(key))?.size, data.length);
      assert.deepEqual(await readAll(await storage.read(key)), data);
      await assert.rejects(storage.put(key, inChunks(data, 1 << 20), { size: data.length + 1, contentType: 'text/plain' }));
      assert.deepEqual(await storage.stat(key), { size: data.length, contentType: 'application/octet-stream' });
    });

    test('a presigned GET URL cannot be used to PUT', async () => {
      const key = `${prefix()}/readonly.bin`;
      await putBytes(key, Buffer.from('keep me'));
      const res = await fetch(await storage.presignGet(key, 600), { method: 'PUT', body: Buffer.from('overwrite') });
      await res.arrayBuffer();
      assert.equal(res.status, 403);
      assert.equal((await readAll(await storage.read(key))).toString(), 'keep me');
    });

    describe('multipart uploads', () => {
      const minPart = options.minPartBytes ?? 5 * 1024 * 1024;

      /** PUTs one part through its presigned URL with plain fetch (no credentials); returns the ETag. */
      async function sendPart(key: string, uploadId: string, partNumber: number, data: Buffer<ArrayBuffer>): Promise<string> {
        const url = await storage.presignUploadPart(key, uploadId, partNumber, 600, data.length);
        assert.ok(url.startsWith(backend.baseUrl), url);
        const res = await fetch(url, { method: 'PUT', body: data });
        const body = await res.text();
        assert.equal(res.status, 200, `part ${partNumber}: ${body}`);
        // Opaque, as in S3 (S3 itself answers the MD5 hex; the local backend a CRC-32).
        const etag = res.headers.get('etag');
        assert.match(etag ?? '', /^"[0-9a-z-]{8,64}"$/);
        return etag as string;
      }

      /** Three parts: two of the minimum size and a shorter last one. */
      function threeParts() {
        return [randomBytes(minPart), randomBytes(minPart), randomBytes(Math.floor((minPart * 2) / 5))];
      }

      test('parts PUT to presigned part URLs, in any order, complete into the object', async () => {
        const key = `${prefix()}/multi part.mp4`;
        const parts = threeParts();
        const uploadId = await storage.createMultipartUpload(key, 'video/mp4', minPart);
        const etags = await Promise.all([3, 1, 2].map((n) => sendPart(key, uploadId, n, parts[n - 1])));
        const etagOf = (n: number) => etags[[3, 1, 2].indexOf(n)];

        const listed = await storage.listParts(key, uploadId);
        assert.deepEqual(
          listed.map((p) => ({ ...p, etag: unquote(p.etag) })),
          parts.map((data, i) => ({ partNumber: i + 1, etag: unquote(etagOf(i + 1)), size: data.length })),
        );
        assert.equal(await storage.stat(key), null, 'nothing is visible before completion');

        const total = Buffer.concat(parts);
        const done = await storage.completeMultipartUpload(
          key,
          uploadId,
          [1, 2, 3].map((n) => ({ partNumber: n, etag: etagOf(n) })),
        );
        assert.deepEqual(done, { size: total.length });
        assert.deepEqual(await storage.stat(key), { size: total.length, contentType: 'video/mp4' });
        assert.deepEqual(await readAll(await storage.read(key)), total);
        await assert.rejects(storage.listParts(key, uploadId), MultipartError, 'a completed upload is gone');
      });

      test('completion refuses missing, out-of-order and mismatched parts, stores nothing, and the upload stays usable', async () => {
        const key = `${prefix()}/checked.bin`;
        const parts = threeParts();
        const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', minPart);
        const e1 = await sendPart(key, uploadId, 1, parts[0]);
        const e2 = await sendPart(key, uploadId, 2, parts[1]);

        const refusals: [{ partNumber: number; etag: string }[], RegExp][] = [
          [
            [
              { partNumber: 1, etag: e1 },
              { partNumber: 2, etag: e2 },
              { partNumber: 3, etag: `"${md5Hex(parts[2])}"` },
            ],
            /part 3 is missing/,
          ],
        ];
        for (const [list, message] of refusals) {
          await assert.rejects(storage.completeMultipartUpload(key, uploadId, list), (err: Error) => {
            assert.ok(err instanceof MultipartError, String(err));
            assert.match(err.message, message);
            return true;
          });
        }
        const e3 = await sendPart(key, uploadId, 3, parts[2]);
        const p = (partNumber: number, etag: string) => ({ partNumber, etag });
        const more: [{ partNumber: number; etag: string }[], RegExp][] = [
          [[p(1, e1), p(3, e3)], /part 2 is missing/],
          [[p(2, e2), p(3, e3)], /part 1 is missing/],
          [[p(1, e1), p(3, e3), p(2, e2)], /parts must be listed in order: part 2 after part 3/],
          [[p(1, e1), p(2, e2), p(2, e2), p(3, e3)], /part 2 is listed twice/],
          [[p(1, e1), p(2, e1), p(3, e3)], /ETag of part 2 does not match the uploaded part/],
          [[], /at least one part/],
        ];
        for (const [list, message] of more) {
          await assert.rejects(storage.completeMultipartUpload(key, uploadId, list), (err: Error) => {
            assert.ok(err instanceof MultipartError, String(err));
            assert.match(err.message, message);
            return true;
          });
          assert.equal(await storage.stat(key), null, `stored after refusing: ${message}`);
        }

        // ETags are accepted with or without quotes.
        const done = await storage.completeMultipartUpload(key, uploadId, [p(1, unquote(e1)), p(2, e2), p(3, unquote(e3))]);
        assert.equal(done.size, Buffer.concat(parts).length);
        assert.deepEqual(await readAll(await storage.read(key)), Buffer.concat(parts));
      });

      test('every part but the last must reach the minimum part size', async () => {
        const key = `${prefix()}/small-parts.bin`;
        const uploadId = await storage.createMultipartUpload(key, 'text/plain', 1000);
        const small = [randomBytes(1000), randomBytes(500)];
        const etags = [await sendPart(key, uploadId, 1, small[0]), await sendPart(key, uploadId, 2, small[1])];
        await assert.rejects(
          storage.completeMultipartUpload(
            key,
            uploadId,
            etags.map((etag, i) => ({ partNumber: i + 1, etag })),
          ),
          (err: Error) => err instanceof MultipartError && /part 1 is 1000 bytes/.test(err.message),
        );
        assert.equal(await storage.stat(key), null);
        // A lone part is also the last one: any size will do.
        assert.deepEqual(await storage.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag: etags[0] }]), { size: 1000 });
        assert.deepEqual(await readAll(await storage.read(key)), small[0]);
      });

      test('abort discards the upload and its parts', async () => {
        const key = `${prefix()}/aborted.bin`;
        const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', 2000);
        const etag = await sendPart(key, uploadId, 1, randomBytes(2000));
        const url2 = await storage.presignUploadPart(key, uploadId, 2, 600, 10);
        await storage.abortMultipartUpload(key, uploadId);

        const listed = await storage.listParts(key, uploadId).catch((err: unknown) => err);
        assert.ok(listed instanceof MultipartError || (Array.isArray(listed) && listed.length === 0), String(listed));
        await assert.rejects(storage.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag }]), MultipartError);
        assert.equal(await storage.stat(key), null);
        const late = await fetch(url2, { method: 'PUT', body: randomBytes(10) });
        await late.arrayBuffer();
        assert.equal(late.status, 404, 'a part sent after abort is refused');
        await storage.abortMultipartUpload(key, uploadId); // unknown uploads are not an error
      });

      test('unfinished uploads of a key: those started and neither completed nor aborted, of that key only', async () => {
        const key = `${prefix()}/unfinished.bin`;
        assert.deepEqual(await storage.unfinishedUploads(key), []);
        const first = await storage.createMultipartUpload(key, 'application/octet-stream', 2000);
        const second = await storage.createMultipartUpload(key, 'application/octet-stream', 2000);
        const other = await storage.createMultipartUpload(`${key}.other`, 'application/octet-stream', 2000);
        await sendPart(key, second, 1, randomBytes(10));
        assert.deepEqual(await storage.unfinishedUploads(key), [first, second].sort());
        await storage.abortMultipartUpload(key, first);
        assert.deepEqual(await storage.unfinishedUploads(key), [second]);
        const etag = await sendPart(key, second, 1, randomBytes(10));
        await storage.completeMultipartUpload(key, second, [{ partNumber: 1, etag }]);
        assert.deepEqual(await storage.unfinishedUploads(key), []);
        assert.deepEqual(await storage.unfinishedUploads(`${key}.other`), [other]);
        await storage.abortMultipartUpload(`${key}.other`, other);
      });

      test('a part URL with a tampered signature, or bent to another part or a whole-object PUT, is refused', async () => {
        const key = `${prefix()}/tamper.bin`;
        const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', 7);
        const url = new URL(await storage.presignUploadPart(key, uploadId, 1, 600, 7));
        const signatureParam = [...url.searchParams.keys()].find((k) => /signature/i.test(k));
        assert.ok(signatureParam, `no signature parameter in ${url}`);
        const partParam = [...url.searchParams.keys()].find((k) => k.toLowerCase() === 'partnumber');
        assert.ok(partParam, `no part number parameter in ${url}`);

        const tampered = new URL(url);
        tampered.searchParams.set(signatureParam, flipLastHexDigit(url.searchParams.get(signatureParam) as string));
        const otherPart = new URL(url);
        otherPart.searchParams.set(partParam, '2');
        const wholeObject = new URL(url);
        for (const name of [...wholeObject.searchParams.keys()]) {
          if (/^(uploadid|partnumber)$/i.test(name)) wholeObject.searchParams.delete(name);
        }
        for (const [what, bent] of [
          ['tampered signature', tampered],
          ['other part', otherPart],
          ['whole object', wholeObject],
        ] as const) {
          const res = await fetch(bent, { method: 'PUT', body: Buffer.from('sneaky!') });
          await res.arrayBuffer();
          assert.equal(res.status, 403, what);
        }
        assert.deepEqual(await storage.listParts(key, uploadId), []);
        assert.equal(await storage.stat(key), null);

        const res = await fetch(url, { method: 'PUT', body: Buffer.from('genuine') });
        await res.arrayBuffer();
        assert.equal(res.status, 200);
        await storage.abortMultipartUpload(key, uploadId);
      });

      test('attack: a part URL takes exactly the bytes it was signed for; more (or fewer) are refused and nothing is kept', async () => {
        const key = `${prefix()}/bounded.bin`;
        const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', 100);
        const url = await storage.presignUploadPart(key, uploadId, 1, 600, 100);
        for (const size of [4 * 1024 * 1024, 101, 99]) {
          // Local answers 413 (larger) / 400 (smaller); S3 refuses the signature (403), and versitygw
          // resets the connection rather than read megabytes it refused.
          const answer = await fetch(url, { method: 'PUT', body: randomBytes(size) }).then(
            async (res) => `${res.status} ${await res.text()}`,
            (err: Error & { cause?: { code?: string } }) => `reset ${err.cause?.code}`,
          );
          assert.match(answer, /^(400|403|413) |^reset (ECONNRESET|EPIPE)$/, `${size} bytes: ${answer}`);
          assert.deepEqual(await storage.listParts(key, uploadId), [], `${size} bytes left a part behind`);
        }
        const exact = randomBytes(100);
        const res = await fetch(url, { method: 'PUT', body: exact });
        assert.equal(res.status, 200, await res.text());
        assert.deepEqual(
          (await storage.listParts(key, uploadId)).map((p) => p.size),
          [100],
        );
        // An empty file's only part is signed for 0 bytes and accepts an empty body.
        const empty = await fetch(await storage.presignUploadPart(key, uploadId, 2, 600, 0), { method: 'PUT', body: Buffer.alloc(0) });
        assert.equal(empty.status, 200, await empty.text());
        await storage.abortMultipartUpload(key, uploadId);
      });

      test('an expired part URL is refused', async () => {
        const key = `${prefix()}/late-part.bin`;
        const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', 8);
        clockOffsetMs = -2 * 3600_000;
        let url: string;
        try {
          url = await storage.presignUploadPart(key, uploadId, 1, 60, 8);
        } finally {
          clockOffsetMs = 0;
        }
        const res = await fetch(url, { method: 'PUT', body: Buffer.from('too late') });
        await res.arrayBuffer();
        assert.equal(res.status, 403);
        assert.deepEqual(await storage.listParts(key, uploadId), []);
        await storage.abortMultipartUpload(key, uploadId);
      });

      test('a put of the same key does not disturb a multipart upload in progress', async () => {
        const key = `${prefix()}/busy.bin`;
        const uploadId = await storage.createMultipartUpload(key, 'video/mp4', 1000);
        const part = randomBytes(1000);
        const etag = await sendPart(key, uploadId, 1, part);
        // Large enough that S3Storage puts it in parts too, through a multipart upload of its own.
        const other = randomBytes(17 * 1024 * 1024);
        await storage.put(key, inChunks(other, 1 << 20), { size: other.length, contentType: 'application/octet-stream' });
        assert.deepEqual(await readAll(await storage.read(key)), other);
        assert.deepEqual(
          (await storage.listParts(key, uploadId)).map((p) => unquote(p.etag)),
          [unquote(etag)],
        );
        await storage.completeMultipartUpload(key, uploadId, [{ partNumber: 1, etag }]);
        assert.deepEqual(await storage.stat(key), { size: 1000, contentType: 'video/mp4' });
        assert.deepEqual(await readAll(await storage.read(key)), part);
      });

      test('part numbers outside 1..10000 and invalid keys are refused', async () => {
        const key = `${prefix()}/numbers.bin`;
        const uploadId = await storage.createMultipartUpload(key, 'application/octet-stream', 10);
        for (const partNumber of [0, -1, 1.5, 10001, Number.NaN]) {
          await assert.rejects(storage.presignUploadPart(key, uploadId, partNumber, 600, 10), String(partNumber));
        }
        for (const partBytes of [-1, 1.5, 5 * 1024 ** 3 + 1, Number.NaN]) {
          await assert.rejects(storage.presignUploadPart(key, uploadId, 1, 600, partBytes), String(partBytes));
        }
        for (const partBytes of [0, -1, 1.5, 5 * 1024 ** 3 + 1, Number.NaN]) {
          await assert.rejects(
            storage.createMultipartUpload(`${prefix()}/size.bin`, 'text/plain', partBytes),
            RangeError,
            String(partBytes),
          );
        }
        await assert.rejects(storage.createMultipartUpload(`${prefix()}/../escape.bin`, 'text/plain', 1));
        await assert.rejects(storage.createMultipartUpload(`${prefix()}/bad-type.bin`, 'not a type\r\n', 1));
        await storage.abortMultipartUpload(key, uploadId);
      });
    });
  });
}

export function inChunks(data: Buffer, chunkSize: number): Readable {
  const chunks: Buffer[] = [];
  for (let i = 0; i < data.length; i += chunkSize) chunks.push(data.subarray(i, i + chunkSize));
  return Readable.from(chunks);
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function md5Hex(data: Buffer): string {
  return createHash('md5').update(data).digest('hex');
}

function unquote(etag: string): string {
  return etag.replace(/^"(.*)"$/, '$1');
}

function flipLastHexDigit(hex: string): string {
  const last = hex.slice(-1).toLowerCase();
  return hex.slice(0, -1) + (last === '0' ? '1' : '0');
}
