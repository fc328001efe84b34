// Benchmark: large media through the service, side by side with the same work done directly.
// The input is a 277 MB 720p MP4 the benchmark makes itself (testsrc2, 120 s, about 18 Mb/s; kept in
// $TMPDIR/ffop-bench-media between runs), served from a loopback HTTP server: a process of its own
// (static-file-server.ts) at the runners' CPU priority (nice 10, its session too). It stands in for a
// remote host, which takes no CPU from the runner; at normal priority on the same 2 cores it did, and
// made the row mostly a measure of that. Two commands, vcpu_count 2:
//   remux:  -i {{in_1}} -c copy {{out_1}}                          (a 277 MB output)
//   to MP3: -i {{in_1}} -vn -c:a libmp3lame -b:a 128k {{out_1}}    (a small output)
// The service runs as `npm start` runs it (compiled, its own process), with local storage, then with
// S3 storage on versitygw (--s3; started through scripts/versitygw.sh). A client submits and waits for
// the command's `end` event (GET /v1/commands/{id}/events), as a client that wants the result at once
// does: no poll loop on the same cores, which the baseline would not pay. The baseline does what the
// service does for a user, directly: curl downloads the input, ffmpeg runs, ffprobe describes the
// output, and the output is stored: `cp` into a folder (local storage), or `curl -T` to a presigned
// PUT URL (S3). Runs alternate between the two.
// Run: node --import tsx e2e/bench/large-media.ts [runs] [--s3] [--only=remux|mp3]
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ApiClient, freePort, startServiceProcess, type ServiceProcess } from '../harness.ts';
import { waitForEndEvent } from '../event-stream-client.ts';
import { setSessionNiceness } from '../../core/confine/session-priority.ts';
import { adminClient, startS3Server, type S3Server } from '../../core/storage/testing/s3-test-server.ts';
import { median, reportRow } from './stats.ts';

const run = promisify(execFile);
const runs = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 5);
const withS3 = process.argv.includes('--s3');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);

interface Case {
  name: string;
  args: string[];
  command: string;
  output: string;
  goalLocal: string;
  goalS3: string;
}

/** Stores the output as the service would; answers how to remove what it stored. */
type Store = (path: string) => Promise<(() => Promise<unknown>) | undefined>;

const CASES: Case[] = [
  {
    name: 'remux',
    args: ['-c', 'copy'],
    command: '-i {{in_1}} -c copy {{out_1}}',
    output: 'remux.mp4',
    goalLocal: '<= 1.15x',
    goalS3: '<= 1.30x',
  },
  {
    name: 'mp3',
    args: ['-vn', '-c:a', 'libmp3lame', '-b:a', '128k'],
    command: '-i {{in_1}} -vn -c:a libmp3lame -b:a 128k {{out_1}}',
    output: 'audio.mp3',
    goalLocal: '<= 1.05x',
    goalS3: '-',
  },
].filter((c) => !only || c.name === only);

/** The 277 MB input, made once and kept for later runs (about 20 s of CPU). */
async function bigInput(): Promise<string> {
  const dir = join(tmpdir(), 'ffop-bench-media');
  const path = join(dir, 'testsrc2-720p-120s.mp4');
  if (
    await stat(path).then(
      (s) => s.size > 200e6,
      () => false,
    )
  )
    return path;
  await mkdir(dir, { recursive: true });
  const partial = `${path}.${process.pid}.part.mp4`;
  console.log('making the 277 MB input (testsrc2 720p, 120 s) once...');
  // prettier-ignore
  await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=30:duration=120', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=120',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '25M', '-maxrate', '25M', '-bufsize', '25M', '-pix_fmt', 'yuv420p',
    '-c:a', 'aac', '-shortest', partial]);
  await run('mv', [partial, path]);
  return path;
}

/** The input's server, at the runners' priority (RUNNER_NICENESS in local-process-backend.ts). */
async function startInputServer(file: string): Promise<{ url: string; allowEntry: string; close(): void }> {
  const port = await freePort();
  const script = fileURLToPath(new URL('static-file-server.ts', import.meta.url));
  // detached: a session of its own, whose autogroup is lowered like a runner's.
  const child = spawn('nice', ['-n', '10', process.execPath, '--import', 'tsx', script, String(port), file], {
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  setSessionNiceness(child.pid, 10);
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
    child.once('exit', (code) => reject(new Error(`the input server exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}`, allowEntry: `127.0.0.1:${port}`, close: () => child.kill() };
}

const input = await bigInput();
const media = await startInputServer(input);
const scratch = await mkdtemp(join(tmpdir(), 'bench-large-'));

/** The same work without the service; `store` puts the output where the service would. */
async function direct(c: Case, store: Store): Promise<number> {
  const t0 = performance.now();
  const local = join(scratch, 'in.mp4');
  const out = join(scratch, c.output);
  await run('curl', ['-sf', '-o', local, `${media.url}/big.mp4`]);
  await run('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-threads', '2', '-i', local, ...c.args, out]);
  await run('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', out]);
  const stored = await store(out);
  const ms = performance.now() - t0;
  await stored?.();
  await rm(local, { force: true });
  await rm(out, { force: true });
  return ms;
}

interface ServiceRun {
  ms: number;
  /** The record's timings: where the time went inside the service. */
  timings: Record<string, number>;
}

async function throughService(api: ApiClient, c: Case): Promise<ServiceRun> {
  const t0 = performance.now();
  const id = await api.submit({
    ffmpeg_command: c.command,
    input_files: { in_1: `${media.url}/big.mp4` },
    output_files: { out_1: c.output },
    vcpu_count: 2,
  });
  const { record, at } = await waitForEndEvent(api.base, api.key, id);
  if (record.status !== 'SUCCESS') throw new Error(JSON.stringify(record));
  // Deleted after each run, as the baseline's copy is: the disk does not fill up run after run.
  for (const out of Object.values<{ file_id: string }>(record.output_files)) await api.request('DELETE', `/v1/files/${out.file_id}`);
  const { steps: _steps, ...timings } = record.timings as Record<string, number> & { steps: unknown };
  return { ms: at - t0, timings };
}

async function measure(label: string, svc: ServiceProcess, store: Store, goal: (c: Case) => string) {
  const api = new ApiClient(svc.url, svc.key);
  for (const c of CASES) {
    await direct(c, store);
    await throughService(api, c); // warm both paths once (page cache, runners)
    const d: number[] = [];
    const s: number[] = [];
    const phases = new Map<string, number[]>();
    for (let i = 0; i < runs; i++) {
      d.push(await direct(c, store));
      const r = await throughService(api, c);
      s.push(r.ms);
      for (const [name, seconds] of Object.entries(r.timings)) phases.set(name, [...(phases.get(name) ?? []), seconds]);
    }
    const [md, ms] = [median(d), median(s)];
    console.log(
      `${label}, ${c.name}: median of ${runs}: service ${(ms / 1000).toFixed(2)} s, direct ${(md / 1000).toFixed(2)} s: ${(ms / md).toFixed(2)}x`,
    );
    const inside = [...phases].map(([name, values]) => `${name.replace(/_seconds$/, '')} ${median(values).toFixed(2)} s`);
    console.log(`  inside the service (medians of the records' timings): ${inside.join(', ')}`);
    console.log(
      `  service: ${s.map((x) => (x / 1000).toFixed(2)).join(', ')} s; direct: ${d.map((x) => (x / 1000).toFixed(2)).join(', ')} s`,
    );
    reportRow({
      what: `277 MB 720p MP4, ${c.command}, vcpu_count 2, ${label} (median of ${runs})`,
      service: `${(ms / 1000).toFixed(2)} s`,
      baseline: `${(md / 1000).toFixed(2)} s (curl, ffmpeg, ffprobe, ${label.includes('S3') ? 'curl -T' : 'cp'})`,
      ratio: `${(ms / md).toFixed(2)}x`,
      goal: goal(c),
    });
  }
}

let s3: S3Server | null = null;
try {
  const svc = await startServiceProcess({ compiled: true, env: { FFOP_ALLOW_ADDRESSES: media.allowEntry } });
  const stored = join(scratch, 'stored');
  await mkdir(stored);
  try {
    const copy: Store = async (path) => {
      const target = join(stored, randomUUID());
      await run('cp', [path, target]);
      return () => rm(target);
    };
    await measure('embedded, local storage', svc, copy, (c) => c.goalLocal);
  } finally {
    await svc.close();
    await rm(stored, { recursive: true, force: true });
  }
  if (withS3) {
    s3 = await startS3Server();
    const bucket = `bench-${randomUUID().slice(0, 8)}`;
    const admin = adminClient(s3.settings);
    await admin.makeBucket(bucket, s3.settings.region);
    const s3svc = await startServiceProcess({
      compiled: true,
      env: {
        FFOP_ALLOW_ADDRESSES: media.allowEntry,
        FFOP_STORAGE: 's3',
        FFOP_S3_ENDPOINT: s3.settings.endpoint,
        FFOP_S3_REGION: s3.settings.region,
        FFOP_S3_BUCKET: bucket,
        FFOP_S3_ACCESS_KEY: s3.settings.accessKey,
        FFOP_S3_SECRET_KEY: s3.settings.secretKey,
      },
    });
    const putToS3: Store = async (path) => {
      const key = `direct/${randomUUID()}`;
      await run('curl', ['-sf', '-T', path, await admin.presignedPutObject(bucket, key, 600)]);
      return () => admin.removeObject(bucket, key);
    };
    try {
      await measure('embedded, S3 storage (versitygw)', s3svc, putToS3, (c) => c.goalS3);
    } finally {
      await s3svc.close();
    }
  }
} finally {
  await s3?.stop();
  media.close();
  await rm(scratch, { recursive: true, force: true });
}
