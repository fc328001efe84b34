// Benchmark: what the service adds to one command, side by side with its baseline in the same run.
// The service runs as `npm start` runs it (compiled, in its own process; `--from-sources` runs it
// through tsx instead, as before); a client submits a 3 s 320x240 clip scaled to 160x120 with
// vcpu_count 1 and polls every 20 ms until SUCCESS. The baseline runs the same ffmpeg and ffprobe
// directly on a local copy. Runs alternate between the two.
// Run: npm run bench -- [runs] [--from-sources]
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, makeClip, startMediaServer, startServiceProcess } from '../harness.ts';
import { median, reportRow } from './stats.ts';

const run = promisify(execFile);
const runs = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 7);
const compiled = !process.argv.includes('--from-sources');
const media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 3));
const svc = await startServiceProcess({ compiled, env: { FFOP_ALLOW_ADDRESSES: media.allowEntry } });
const api = new ApiClient(svc.url, svc.key);
const scratch = await mkdtemp(join(tmpdir(), 'bench-direct-'));

async function direct(): Promise<number> {
  const t0 = performance.now();
  await run('ffmpeg', [
    '-hide_banner',
    '-nostdin',
    '-loglevel',
    'error',
    '-y',
    '-i',
    join(media.dir, 'clip.mp4'),
    '-vf',
    'scale=160:120',
    '-threads',
    '1',
    join(scratch, 'small.mp4'),
  ]);
  await run('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', join(scratch, 'small.mp4')]);
  return performance.now() - t0;
}

async function throughService(): Promise<number> {
  const t0 = performance.now();
  const id = await api.submit({
    ffmpeg_command: '-i {{in_1}} -vf scale=160:120 {{out_1}}',
    input_files: { in_1: `${media.url}/clip.mp4` },
    output_files: { out_1: 'small.mp4' },
    vcpu_count: 1,
  });
  for (;;) {
    const res = await api.get(`/v1/commands/${id}`);
    if (res.body.status === 'SUCCESS') return performance.now() - t0;
    if (res.body.status === 'FAILED') throw new Error(JSON.stringify(res.body));
    await new Promise((r) => setTimeout(r, 20));
  }
}

try {
  await direct();
  await throughService(); // warm both paths once
  const d: number[] = [];
  const s: number[] = [];
  for (let i = 0; i < runs; i++) {
    d.push(await direct());
    s.push(await throughService());
  }
  const [md, ms] = [median(d), median(s)];
  console.log(
    `${compiled ? 'compiled service' : 'service from sources (tsx)'}: submit -> SUCCESS (20 ms polls), median of ${runs}: ` +
      `service ${ms.toFixed(0)} ms, direct ffmpeg + ffprobe ${md.toFixed(0)} ms, ` +
      `overhead ${(ms - md).toFixed(0)} ms (${(ms / md).toFixed(2)}x)`,
  );
  console.log(`  service runs: ${s.map((x) => x.toFixed(0)).join(', ')} ms; direct runs: ${d.map((x) => x.toFixed(0)).join(', ')} ms`);
  reportRow({
    what: `submit -> SUCCESS of a 3 s 320x240 clip scaled to 160x120, vcpu_count 1, 20 ms polls (median of ${runs})`,
    service: `${ms.toFixed(0)} ms`,
    baseline: `${md.toFixed(0)} ms (ffmpeg + ffprobe directly)`,
    ratio: `${ms >= md ? '+' : ''}${(ms - md).toFixed(0)} ms`,
    goal: '<= +40 ms',
  });
} finally {
  await svc.close();
  await media.close();
  await rm(scratch, { recursive: true, force: true });
}
