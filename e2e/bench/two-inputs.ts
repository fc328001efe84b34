// Benchmark: a command with two inputs on a host that serves each connection at a limited rate, as
// remote hosts and object stores do (here ~25 MB/s per connection, from a loopback server that paces
// its writes; timers, so it takes little CPU). Two 18 MB 720p clips the benchmark makes itself:
//   -i {{in_1}} -i {{in_2}} -map 0:v -map 1:a -c copy {{out_1}}     vcpu_count 1
// The service runs as `npm start` runs it (compiled, local storage); a client submits and polls every
// 20 ms until SUCCESS. The baseline does the same work directly, downloading both at once as a user
// would (`curl --parallel --parallel-immediate`: a connection each), then ffmpeg, ffprobe and `cp`
// into a folder. Runs alternate between the two.
// Run: node --import tsx e2e/bench/two-inputs.ts [runs=5]
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, startServiceProcess } from '../harness.ts';
import { median, reportRow } from './stats.ts';

const run = promisify(execFile);
const runs = Number(process.argv[2] ?? 5);
/** Each connection gets this much every PACE_MS: about 25 MB/s. */
const PACE_BYTES = 256 * 1024;
const PACE_MS = 10;

/** An 8 s 720p clip at 20 Mb/s (about 18 MB), made once and kept next to large-media.ts's input. */
async function clip(): Promise<string> {
  const dir = join(tmpdir(), 'ffop-bench-media');
  const path = join(dir, 'testsrc2-720p-8s.mp4');
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
    '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=30:duration=8', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=8',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '20M', '-c:a', 'aac', '-shortest', partial]);
  await run('mv', [partial, path]);
  return path;
}

const body = await readFile(await clip());
const media = createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': 'video/mp4', 'Content-Length': body.length });
  let sent = 0;
  const next = () => {
    if (res.destroyed) return;
    if (sent >= body.length) return void res.end();
    res.write(body.subarray(sent, sent + PACE_BYTES));
    sent += PACE_BYTES;
    setTimeout(next, PACE_MS);
  };
  next();
});
await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
const port = (media.address() as AddressInfo).port;
const urls = [`http://127.0.0.1:${port}/a.mp4`, `http://127.0.0.1:${port}/b.mp4`];
const scratch = await mkdtemp(join(tmpdir(), 'bench-two-inputs-'));

async function direct(): Promise<number> {
  const t0 = performance.now();
  const [a, b, out, stored] = ['a.mp4', 'b.mp4', 'mixed.mp4', randomUUID()].map((name) => join(scratch, name));
  await run('curl', ['-sf', '--parallel', '--parallel-immediate', '-o', a, urls[0], '-o', b, urls[1]]);
  // prettier-ignore
  await run('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-threads', '1', '-i', a, '-i', b,
    '-map', '0:v', '-map', '1:a', '-c', 'copy', out]);
  await run('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', out]);
  await run('cp', [out, stored]);
  const ms = performance.now() - t0;
  for (const path of [a, b, out, stored]) await rm(path, { force: true });
  return ms;
}

async function throughService(api: ApiClient): Promise<number> {
  const t0 = performance.now();
  const id = await api.submit({
    ffmpeg_command: '-i {{in_1}} -i {{in_2}} -map 0:v -map 1:a -c copy {{out_1}}',
    input_files: { in_1: urls[0], in_2: urls[1] },
    output_files: { out_1: 'mixed.mp4' },
    vcpu_count: 1,
  });
  for (;;) {
    const res = await api.get(`/v1/commands/${id}`);
    if (res.body.status === 'SUCCESS') {
      const ms = performance.now() - t0;
      for (const out of Object.values<{ file_id: string }>(res.body.output_files)) await api.request('DELETE', `/v1/files/${out.file_id}`);
      return ms;
    }
    if (res.body.status === 'FAILED') throw new Error(JSON.stringify(res.body));
    await new Promise((r) => setTimeout(r, 20));
  }
}

try {
  const svc = await startServiceProcess({ compiled: true, env: { FFOP_ALLOW_ADDRESSES: `127.0.0.1:${port}` } });
  try {
    const api = new ApiClient(svc.url, svc.key);
    await direct();
    await throughService(api); // warm both paths once
    const d: number[] = [];
    const s: number[] = [];
    for (let i = 0; i < runs; i++) {
      d.push(await direct());
      s.push(await throughService(api));
    }
    const [md, ms] = [median(d), median(s)];
    const mb = (body.length / 1e6).toFixed(0);
    console.log(
      `two ${mb} MB inputs at ~25 MB/s per connection, median of ${runs}: service ${(ms / 1000).toFixed(2)} s, direct ${(md / 1000).toFixed(2)} s`,
    );
    console.log(
      `  service: ${s.map((x) => (x / 1000).toFixed(2)).join(', ')} s; direct: ${d.map((x) => (x / 1000).toFixed(2)).join(', ')} s`,
    );
    reportRow({
      what: `two ${mb} MB inputs served at ~25 MB/s per connection, -map 0:v -map 1:a -c copy, embedded (median of ${runs})`,
      service: `${(ms / 1000).toFixed(2)} s`,
      baseline: `${(md / 1000).toFixed(2)} s (curl --parallel --parallel-immediate, ffmpeg, ffprobe, cp)`,
      ratio: `${(ms / md).toFixed(2)}x`,
      goal: '-',
    });
  } finally {
    await svc.close();
  }
} finally {
  media.closeAllConnections();
  media.close();
  await rm(scratch, { recursive: true, force: true });
}
