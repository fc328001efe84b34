// Benchmark: inputs on a host that serves each connection at a limited rate, as remote hosts and
// object stores do (here ~25 MB/s per connection, from a loopback server that paces its writes:
// timers, so it takes little CPU; it takes byte ranges, with an ETag, as S3 and CDNs do). Clips the
// benchmark makes itself (720p testsrc2 at 20 Mb/s, kept in $TMPDIR/ffop-bench-media):
//   two inputs:  two 18 MB clips, -i {{in_1}} -i {{in_2}} -map 0:v -map 1:a -c copy {{out_1}}
//   one input:   an 80 MB clip,   -i {{in_1}} -c copy {{out_1}}
// vcpu_count 1. The service runs as `npm start` runs it (compiled, local storage); a client submits
// and waits for the command's `end` event (GET /v1/commands/{id}/events). The baseline does the same
// work directly, as a user would: curl downloads the inputs (two at once: `curl --parallel
// --parallel-immediate`, a connection each), then ffmpeg, ffprobe and `cp` into a folder. Runs
// alternate between the two.
// Run: node --import tsx e2e/bench/paced-inputs.ts [runs=5]
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, startServiceProcess } from '../harness.ts';
import { waitForEndEvent } from '../event-stream-client.ts';
import { median, reportRow } from './stats.ts';

const run = promisify(execFile);
const runs = Number(process.argv[2] ?? 5);
/** Each connection gets this much every PACE_MS: about 25 MB/s. */
const PACE_BYTES = 256 * 1024;
const PACE_MS = 10;

/** A 720p clip at 20 Mb/s (about 2.3 MB per second of it), made once. */
async function clip(seconds: number): Promise<string> {
  const dir = join(tmpdir(), 'ffop-bench-media');
  const path = join(dir, `testsrc2-720p-${seconds}s-20M.mp4`);
  if (
    await stat(path).then(
      () => true,
      () => false,
    )
  )
    return path;
  await mkdir(dir, { recursive: true });
  const partial = `${path}.${process.pid}.part.mp4`;
  // prettier-ignore
  await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', `testsrc2=size=1280x720:rate=30:duration=${seconds}`, '-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`,
    '-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '20M', '-c:a', 'aac', '-shortest', partial]);
  await run('mv', [partial, path]);
  return path;
}

const files = new Map<string, Buffer>([
  ['/a.mp4', await readFile(await clip(8))],
  ['/large.mp4', await readFile(await clip(35))],
]);
files.set('/b.mp4', files.get('/a.mp4')!);

/** Paces one answer's bytes at PACE_BYTES per PACE_MS. */
function paced(res: import('node:http').ServerResponse, bytes: Buffer): void {
  let sent = 0;
  const next = () => {
    if (res.destroyed) return;
    if (sent >= bytes.length) return void res.end();
    res.write(bytes.subarray(sent, sent + PACE_BYTES));
    sent += PACE_BYTES;
    setTimeout(next, PACE_MS);
  };
  next();
}

const media = createServer((req, res) => {
  const body = files.get(req.url ?? '');
  if (!body) return void res.writeHead(404).end();
  const etag = `"${body.length}"`;
  const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
  if (range && (req.headers['if-range'] ?? etag) === etag) {
    const [first, last] = [Number(range[1]), Math.min(Number(range[2]), body.length - 1)];
    res.writeHead(206, { 'Content-Range': `bytes ${first}-${last}/${body.length}`, 'Content-Length': last - first + 1, ETag: etag });
    return paced(res, body.subarray(first, last + 1));
  }
  res.writeHead(200, { 'Content-Type': 'video/mp4', 'Content-Length': body.length, 'Accept-Ranges': 'bytes', ETag: etag });
  paced(res, body);
});
await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
const scratch = await mkdtemp(join(tmpdir(), 'bench-paced-inputs-'));

interface Case {
  name: string;
  /** alias -> path on the paced host */
  inputs: Record<string, string>;
  /** ffmpeg's arguments between the inputs and the output */
  args: string[];
}

const CASES: Case[] = [
  { name: 'two 18 MB inputs', inputs: { in_1: '/a.mp4', in_2: '/b.mp4' }, args: ['-map', '0:v', '-map', '1:a', '-c', 'copy'] },
  { name: 'one 80 MB input', inputs: { in_1: '/large.mp4' }, args: ['-c', 'copy'] },
];

async function direct(c: Case): Promise<number> {
  const t0 = performance.now();
  const local = Object.keys(c.inputs).map((alias) => join(scratch, `${alias}.mp4`));
  const [out, stored] = [join(scratch, 'out.mp4'), join(scratch, randomUUID())];
  const downloads = Object.values(c.inputs).flatMap((path, i) => ['-o', local[i], `${base}${path}`]);
  await run('curl', ['-sf', ...(local.length > 1 ? ['--parallel', '--parallel-immediate'] : []), ...downloads]);
  // prettier-ignore
  await run('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-threads', '1',
    ...local.flatMap((path) => ['-i', path]), ...c.args, out]);
  await run('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', out]);
  await run('cp', [out, stored]);
  const ms = performance.now() - t0;
  for (const path of [...local, out, stored]) await rm(path, { force: true });
  return ms;
}

async function throughService(api: ApiClient, c: Case): Promise<number> {
  const t0 = performance.now();
  const aliases = Object.keys(c.inputs);
  const id = await api.submit({
    ffmpeg_command: `${aliases.map((alias) => `-i {{${alias}}}`).join(' ')} ${c.args.join(' ')} {{out_1}}`,
    input_files: Object.fromEntries(Object.entries(c.inputs).map(([alias, path]) => [alias, `${base}${path}`])),
    output_files: { out_1: 'out.mp4' },
    vcpu_count: 1,
  });
  const { record, at } = await waitForEndEvent(api.base, api.key, id);
  if (record.status !== 'SUCCESS') throw new Error(JSON.stringify(record));
  for (const out of Object.values<{ file_id: string }>(record.output_files)) await api.request('DELETE', `/v1/files/${out.file_id}`);
  return at - t0;
}

try {
  const svc = await startServiceProcess({ compiled: true, env: { FFOP_ALLOW_ADDRESSES: base.slice('http://'.length) } });
  try {
    const api = new ApiClient(svc.url, svc.key);
    for (const c of CASES) {
      await direct(c);
      await throughService(api, c); // warm both paths once
      const d: number[] = [];
      const s: number[] = [];
      for (let i = 0; i < runs; i++) {
        d.push(await direct(c));
        s.push(await throughService(api, c));
      }
      const [md, ms] = [median(d), median(s)];
      console.log(
        `${c.name} at ~25 MB/s per connection, median of ${runs}: service ${(ms / 1000).toFixed(2)} s, direct ${(md / 1000).toFixed(2)} s`,
      );
      console.log(
        `  service: ${s.map((x) => (x / 1000).toFixed(2)).join(', ')} s; direct: ${d.map((x) => (x / 1000).toFixed(2)).join(', ')} s`,
      );
      reportRow({
        what: `${c.name} from a host serving ~25 MB/s per connection (ranges taken), -c copy, embedded (median of ${runs})`,
        service: `${(ms / 1000).toFixed(2)} s`,
        baseline: `${(md / 1000).toFixed(2)} s (curl${c.name.startsWith('two') ? ' --parallel --parallel-immediate' : ''}, ffmpeg, ffprobe, cp)`,
        ratio: `${(ms / md).toFixed(2)}x`,
        goal: '-',
      });
    }
  } finally {
    await svc.close();
  }
} finally {
  media.closeAllConnections();
  media.close();
  await rm(scratch, { recursive: true, force: true });
}
