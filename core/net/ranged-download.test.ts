import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { ErrorStatus } from '../commands/error-status.ts';
import { createAddressPolicy } from './address-policy.ts';
import { DownloadError, downloadToFile } from './download.ts';
import { planRanges } from './ranged-download.ts';

/** Small enough for a test, large enough for 4 parts of several reads each. */
const FILE = randomBytes(1 << 20);
const PARTS = 4;
const PART = FILE.length / PARTS;

interface RangeHost {
  url: string;
  /** Each GET's Range and If-Range headers ('' when absent), in arrival order. */
  gets: { range: string; ifRange: string }[];
  /** What the host serves from now on (a file that changes between requests). */
  replace(body: Buffer, etag: string): void;
  /** Whether held ranged answers had to be let go by the 10 s timer (their GETs did not all come). */
  releasedByTimer(): boolean;
}

interface HostOptions {
  /** The headers of a 200 beyond Content-Length (default: Accept-Ranges and a strong ETag); with `x-stall`, its body stops after 1000 bytes. */
  headers?: http.OutgoingHttpHeaders;
  /** Answers a ranged GET (first..last) itself; default: the range as asked, when If-Range matches. */
  answerRange?: (res: http.ServerResponse, first: number, last: number, body: Buffer) => void;
  /** Holds every ranged answer until this many ranged GETs have arrived (at most 10 s). */
  holdUntilRanges?: number;
}

/** A loopback HTTP host that serves one file, in ranges when asked (RFC 9110 14, If-Range 13.1.5). */
async function startRangeHost(t: TestContext, o: HostOptions = {}): Promise<RangeHost> {
  let body: Buffer = FILE;
  let etag = '"v1"';
  const gets: RangeHost['gets'] = [];
  const held: (() => void)[] = [];
  let releasedByTimer = false;
  const server = http.createServer((req, res) => {
    const range = req.headers.range ?? '';
    const ifRange = String(req.headers['if-range'] ?? '');
    gets.push({ range, ifRange });
    const match = /^bytes=(\d+)-(\d+)$/.exec(range);
    if (!match || (ifRange !== '' && ifRange !== etag)) {
      const { 'x-stall': stall, ...headers } = o.headers ?? { 'accept-ranges': 'bytes', etag };
      res.writeHead(200, { 'content-length': body.length, ...headers });
      if (stall) return void res.write(body.subarray(0, 1000));
      return void res.end(body);
    }
    const [first, last] = [Number(match[1]), Number(match[2])];
    const answer = () =>
      o.answerRange
        ? o.answerRange(res, first, last, body)
        : res
            .writeHead(206, { 'content-range': `bytes ${first}-${last}/${body.length}`, 'content-length': last - first + 1, etag })
            .end(body.subarray(first, last + 1));
    held.push(answer);
    const ranged = gets.filter((g) => g.range !== '').length;
    if (!o.holdUntilRanges || ranged >= o.holdUntilRanges) held.splice(0).forEach((release) => release());
    else
      setTimeout(() => {
        if (held.length > 0) releasedByTimer = true;
        held.splice(0).forEach((release) => release());
      }, 10_000).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const port = (server.address() as AddressInfo).port;
  return {
    releasedByTimer: () => releasedByTimer,
    url: `http://127.0.0.1:${port}/big.mp4`,
    gets,
    replace: (next, nextEtag) => {
      body = next;
      etag = nextEtag;
    },
  };
}

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ranged-download-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const baseInRanges = {
  maxBytes: 10 << 20,
  timeoutMs: 30_000,
  policy: createAddressPolicy(['127.0.0.0/8']),
  rangedParts: PARTS,
  rangedMinBytes: 1 << 19,
};
const askedRanges = (host: RangeHost) => host.gets.filter((g) => g.range !== '').map((g) => g.range);
const expectedRanges = [1, 2, 3].map((i) => `bytes=${i * PART}-${(i + 1) * PART - 1}`);

// Both ways of writing the parts: through the thread pool (the service) and as they arrive (the runner).
for (const syncWrites of [false, true]) {
  describe(`downloadToFile in ranges${syncWrites ? ', parts written as they arrive (syncWrites)' : ''}`, () => {
    const inRanges = { ...baseInRanges, syncWrites };

    test('a large file from a host that takes ranges comes in 4 parts at once, byte for byte', async (t) => {
      const dir = await tempDir(t);
      // Every ranged answer waits until all 3 ranged GETs are in: one at a time, this would take 10 s per part.
      const host = await startRangeHost(t, { holdUntilRanges: 3 });
      const dest = path.join(dir, 'in.mp4');
      const result = await downloadToFile(host.url, dest, inRanges);
      assert.equal(result.bytes, FILE.length);
      assert.ok((await readFile(dest)).equals(FILE), 'the parts put together are the file');
      assert.deepEqual(await readdir(dir), ['in.mp4']);
      // The first GET is whole (its first part is used), then one GET per other part, each tied to the version.
      assert.deepEqual(host.gets[0], { range: '', ifRange: '' });
      assert.deepEqual(askedRanges(host).sort(), [...expectedRanges].sort());
      assert.ok(host.gets.slice(1).every((g) => g.ifRange === '"v1"'));
      assert.equal(host.gets.length, 4, 'no GET of the whole file again');
      assert.equal(host.releasedByTimer(), false, 'the ranged GETs were open at the same time');
    });

    test('a host that answers a range with the whole file (200) gets the file whole, from one more GET', async (t) => {
      const dir = await tempDir(t);
      const host = await startRangeHost(t, {
        answerRange: (res, _f, _l, body) => res.writeHead(200, { 'content-length': body.length }).end(body),
      });
      const dest = path.join(dir, 'in.mp4');
      await downloadToFile(host.url, dest, inRanges);
      assert.ok((await readFile(dest)).equals(FILE));
      assert.deepEqual(await readdir(dir), ['in.mp4'], 'no part file left');
      assert.deepEqual(host.gets.at(-1), { range: '', ifRange: '' }, 'the last GET is for the whole file');
    });

    test('a range answered with other bytes than asked (another Content-Range) is never written in: the file comes whole', async (t) => {
      const dir = await tempDir(t);
      const host = await startRangeHost(t, {
        answerRange: (res, first, last, body) =>
          res
            .writeHead(206, { 'content-range': `bytes 0-${last - first}/${body.length}`, 'content-length': last - first + 1 })
            .end(body.subarray(0, last - first + 1)),
      });
      const dest = path.join(dir, 'in.mp4');
      await downloadToFile(host.url, dest, inRanges);
      assert.ok((await readFile(dest)).equals(FILE));
      assert.deepEqual(await readdir(dir), ['in.mp4']);
    });

    test('a range answer that runs past its length (no Content-Length) is refused: the file comes whole', async (t) => {
      const dir = await tempDir(t);
      const host = await startRangeHost(t, {
        answerRange: (res, first, last, body) => {
          res.writeHead(206, { 'content-range': `bytes ${first}-${last}/${body.length}`, etag: '"v1"' }); // chunked
          res.end(Buffer.concat([body.subarray(first, last + 1), Buffer.from('and then some')]));
        },
      });
      const dest = path.join(dir, 'in.mp4');
      await downloadToFile(host.url, dest, inRanges);
      assert.ok((await readFile(dest)).equals(FILE));
      assert.deepEqual(host.gets.at(-1), { range: '', ifRange: '' }, 'refused, and fetched whole');
    });

    test('a file that changes between the first GET and the ranges is not stitched from two versions', async (t) => {
      const dir = await tempDir(t);
      const host = await startRangeHost(t);
      const changed = randomBytes(FILE.length);
      // The host changes the file as soon as it has answered the first GET: If-Range no longer matches.
      const replaceAfterFirst = setInterval(() => host.gets.length > 0 && host.replace(changed, '"v2"'), 1);
      t.after(() => clearInterval(replaceAfterFirst));
      const dest = path.join(dir, 'in.mp4');
      await downloadToFile(host.url, dest, inRanges);
      const got = await readFile(dest);
      assert.ok(got.equals(changed) || got.equals(FILE), 'one version, whole');
    });

    test('a host that ignores If-Range and answers ranges of a newer file is refused: one version, whole', async (t) => {
      const dir = await tempDir(t);
      const changed = randomBytes(FILE.length);
      const host = await startRangeHost(t, {
        answerRange: (res, first, last) =>
          res
            .writeHead(206, {
              'content-range': `bytes ${first}-${last}/${changed.length}`,
              'content-length': last - first + 1,
              etag: '"v2"',
            })
            .end(changed.subarray(first, last + 1)),
      });
      const dest = path.join(dir, 'in.mp4');
      await downloadToFile(host.url, dest, inRanges);
      assert.ok((await readFile(dest)).equals(FILE), 'the version of the whole answer, not parts of two');
      assert.deepEqual(host.gets.at(-1), { range: '', ifRange: '' });
    });

    test('one connection when the host does not say it takes ranges, gives no validator or only a weak ETag, or the file is small', async (t) => {
      const dir = await tempDir(t);
      for (const headers of [
        { etag: '"v1"' },
        { 'accept-ranges': 'bytes' },
        { 'accept-ranges': 'bytes', etag: 'W/"v1"' },
        { 'accept-ranges': 'none', etag: '"v1"' },
      ]) {
        const host = await startRangeHost(t, { headers });
        await downloadToFile(host.url, path.join(dir, 'in.mp4'), inRanges);
        assert.deepEqual(host.gets, [{ range: '', ifRange: '' }], JSON.stringify(headers));
      }
      const host = await startRangeHost(t);
      await downloadToFile(host.url, path.join(dir, 'small.mp4'), { ...inRanges, rangedMinBytes: FILE.length + 1 });
      assert.equal(host.gets.length, 1);
    });

    test('a part whose connection breaks fails the download (UNREACHABLE, worth another try) and leaves nothing', async (t) => {
      const dir = await tempDir(t);
      const host = await startRangeHost(t, {
        answerRange: (res, first, last, body) => {
          res.writeHead(206, {
            'content-range': `bytes ${first}-${last}/${body.length}`,
            'content-length': last - first + 1,
            etag: '"v1"',
          });
          res.write(body.subarray(first, first + 1000));
          setImmediate(() => res.socket?.destroy());
        },
      });
      await assert.rejects(downloadToFile(host.url, path.join(dir, 'in.mp4'), inRanges), (error: unknown) => {
        assert.ok(error instanceof DownloadError, String(error));
        assert.equal(error.errorStatus, ErrorStatus.UNREACHABLE_INPUT_FILE);
        assert.equal(error.retryable, true);
        return true;
      });
      assert.deepEqual(await readdir(dir), []);
    });

    test('a part that fails stops the others at once, the first answer too', { timeout: 60_000 }, async (t) => {
      const dir = await tempDir(t);
      const host = await startRangeHost(t, {
        // The first answer sends a little, then nothing: only being stopped ends it (its idle limit is 10 minutes).
        headers: { 'accept-ranges': 'bytes', etag: '"v1"', 'x-stall': '1' },
        answerRange: (res) => res.socket?.destroy(),
      });
      const stalling = { ...inRanges, idleTimeoutMs: 600_000, timeoutMs: 600_000 };
      await assert.rejects(downloadToFile(host.url, path.join(dir, 'in.mp4'), stalling), DownloadError);
      assert.deepEqual(await readdir(dir), []);
    });

    test('the ranged GETs go through the address checks like the first', async (t) => {
      const dir = await tempDir(t);
      const host = await startRangeHost(t);
      const port = new URL(host.url).port;
      // Allowed until the host has the first GET: the address policy is asked again for each connection.
      const policy = { isAllowed: (address: string, p: number) => address === '127.0.0.1' && String(p) === port && host.gets.length === 0 };
      await assert.rejects(downloadToFile(host.url, path.join(dir, 'in.mp4'), { ...inRanges, policy }), (error: unknown) => {
        assert.ok(error instanceof DownloadError);
        assert.equal(error.errorStatus, ErrorStatus.FORBIDDEN_INPUT_ADDRESS);
        return true;
      });
      assert.equal(host.gets.length, 1, 'no ranged GET reached the host');
      assert.deepEqual(await readdir(dir), []);
    });
  });
}

describe('planRanges', () => {
  const answer = (headers: http.IncomingHttpHeaders, statusCode = 200) => ({ statusCode, headers }) as http.IncomingMessage;

  test('splits the file into even parts, the last one shorter', () => {
    const plan = planRanges(answer({ 'content-length': '10', 'accept-ranges': 'bytes', etag: '"x"' }), { parts: 4, minBytes: 1 });
    assert.deepEqual(plan, {
      size: 10,
      validator: '"x"',
      validatorHeader: 'etag',
      parts: [
        [0, 2],
        [3, 5],
        [6, 8],
        [9, 9],
      ],
    });
  });

  test('uses a Last-Modified a second older than the answer when there is no strong ETag; none for compressed answers, other statuses or unknown sizes', () => {
    const lastModified = 'Sun, 29 Nov 2026 04:00:00 GMT';
    const base = {
      'content-length': '100',
      'accept-ranges': 'bytes',
      'last-modified': lastModified,
      date: 'Sun, 29 Nov 2026 04:00:01 GMT',
    };
    assert.equal(planRanges(answer({ ...base, etag: 'W/"weak"' }), { parts: 2, minBytes: 1 })?.validator, lastModified);
    // Modified in the second it was served: a rewrite within that second would keep the date (RFC 9110, 8.8.2.2).
    assert.equal(planRanges(answer({ ...base, date: lastModified }), { parts: 2, minBytes: 1 }), null);
    assert.equal(planRanges(answer({ ...base, date: undefined }), { parts: 2, minBytes: 1 }), null);
    assert.equal(planRanges(answer({ ...base, 'content-encoding': 'gzip' }), { parts: 2, minBytes: 1 }), null);
    assert.equal(planRanges(answer(base, 203), { parts: 2, minBytes: 1 }), null);
    assert.equal(planRanges(answer({ ...base, 'content-length': undefined }), { parts: 2, minBytes: 1 }), null);
    assert.equal(planRanges(answer(base), { parts: 1, minBytes: 1 }), null);
  });
});
