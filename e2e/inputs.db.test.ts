// How a command's inputs are fetched, through the public API: several at once, and a large one from a
// host that takes byte ranges in parts at once (runner-image/inputs.ts, core/net/ranged-download.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startService, type ServiceFixture } from './harness.ts';

/** A WAV file of `seconds` of 48 kHz 16-bit stereo noise: a valid input of any size ffmpeg reads fast. */
function wav(seconds: number): Buffer {
  const data = randomBytes(seconds * 48_000 * 4);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(2, 22); // channels
  header.writeUInt32LE(48_000, 24);
  header.writeUInt32LE(48_000 * 4, 28); // bytes per second
  header.writeUInt16LE(4, 32); // bytes per frame
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

describe('input downloads', () => {
  let svc: ServiceFixture;
  let host: Server;
  let base: string;
  const small = wav(2);
  const large = wav(360); // about 66 MiB: fetched in ranges
  /** Every GET: its path, Range and If-Range. */
  const gets: { path: string; range: string; ifRange: string }[] = [];
  /** /a.wav and /b.wav are answered only once both have been asked for (or after 20 s each). */
  const held: { release: () => void; timer: NodeJS.Timeout }[] = [];
  let bothAskedAtOnce = false;

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '';
    const range = req.headers.range ?? '';
    gets.push({ path, range, ifRange: String(req.headers['if-range'] ?? '') });
    const body = path === '/large.wav' ? large : small;
    const etag = `"${path}-${body.length}"`;
    const match = /^bytes=(\d+)-(\d+)$/.exec(range);
    if (match && req.headers['if-range'] === etag) {
      const [first, last] = [Number(match[1]), Number(match[2])];
      res.writeHead(206, { 'content-range': `bytes ${first}-${last}/${body.length}`, 'content-length': last - first + 1, etag });
      return void res.end(body.subarray(first, last + 1));
    }
    const whole = () => res.writeHead(200, { 'content-length': body.length, 'accept-ranges': 'bytes', etag }).end(body);
    if (path !== '/a.wav' && path !== '/b.wav') return whole();
    const entry = {
      release: whole,
      // Asked for one at a time: answered after a while, and no longer waiting.
      timer: setTimeout(() => held.splice(held.indexOf(entry), 1)[0]?.release(), 20_000),
    };
    held.push(entry);
    if (held.length === 2) {
      bothAskedAtOnce = true;
      for (const waiting of held.splice(0)) {
        clearTimeout(waiting.timer);
        waiting.release();
      }
    }
  };

  before(async () => {
    host = createServer(serve);
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    const address = `127.0.0.1:${(host.address() as AddressInfo).port}`;
    base = `http://${address}`;
    svc = await startService({ allow: [address] });
  });
  after(async () => {
    await svc?.close();
    host?.closeAllConnections();
    await new Promise((r) => host?.close(r));
  });

  test("a command's inputs are fetched at once: each is asked for while the other is still coming", async () => {
    const api = svc.client();
    const id = await api.submit({
      input_files: { in_1: `${base}/a.wav`, in_2: `${base}/b.wav` },
      output_files: { out_1: 'mixed.wav' },
      ffmpeg_command: '-i {{in_1}} -i {{in_2}} -filter_complex amix=inputs=2 -t 1 {{out_1}}',
      vcpu_count: 1,
    });
    const { record: end } = await api.waitForEnd(id);
    assert.equal(end.status, 'SUCCESS', JSON.stringify(end));
    // One at a time, the second would be asked for only after the first was answered (after 20 s).
    assert.equal(bothAskedAtOnce, true);
  });

  test('a large input from a host that takes byte ranges comes in 4 parts, each tied to its version', async () => {
    const api = svc.client();
    gets.length = 0;
    const id = await api.submit({
      input_files: { in_1: `${base}/large.wav` },
      output_files: { out_1: 'cut.wav' },
      ffmpeg_command: '-i {{in_1}} -ss 359 -c copy {{out_1}}',
      vcpu_count: 1,
    });
    const { record: end } = await api.waitForEnd(id);
    assert.equal(end.status, 'SUCCESS', JSON.stringify(end));
    // The last second of the file, so every part made it: a stitched or short file would not end there.
    const duration = Number(end.output_files.out_1.duration);
    assert.ok(duration > 0.9 && duration <= 1, JSON.stringify(end.output_files.out_1));
    const part = Math.ceil(large.length / 4);
    const ranges = gets.filter((g) => g.range !== '');
    assert.deepEqual(
      ranges.map((g) => g.range).sort(),
      [1, 2, 3].map((i) => `bytes=${i * part}-${Math.min(large.length, (i + 1) * part) - 1}`).sort(),
    );
    assert.ok(ranges.every((g) => g.ifRange === `"/large.wav-${large.length}"`));
    assert.equal(gets.length, 4, 'the first GET whole, then the three other parts: nothing fetched twice');
  });
});
