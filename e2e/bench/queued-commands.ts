// Benchmark: many commands submitted at once, from submit until all SUCCESS, against the same ffmpeg +
// ffprobe runs made directly, as many at a time as the machine has cores, in the same run.
//   cheap  1 s testsrc encoded at 160x120, default vCPUs (each takes the whole machine in the service)
//   clip   a 3 s 320x240 clip (from a local HTTP server) scaled to 160x120 with vcpu_count 1
// Run: npm run bench:queued -- [count=100] [cheap|clip]
import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, makeClip, startMediaServer, startServiceProcess } from '../harness.ts';
import { reportRow } from './stats.ts';

const run = promisify(execFile);
const count = Number(process.argv[2] ?? 100);
const workload = process.argv[3] === 'clip' ? 'clip' : 'cheap';
const lanes = availableParallelism();
const scratch = await mkdtemp(join(tmpdir(), 'bench-queued-'));
const media = workload === 'clip' ? await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 3)) : null;

/** The ffmpeg arguments of one direct run, writing `out`. */
function directArgs(out: string): string[] {
  if (media) return ['-i', join(media.dir, 'clip.mp4'), '-vf', 'scale=160:120', '-threads', '1', out];
  return ['-f', 'lavfi', '-i', 'testsrc=d=1:s=160x120', out];
}

const submission = media
  ? {
      ffmpeg_command: '-i {{in_1}} -vf scale=160:120 {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      vcpu_count: 1,
    }
  : { ffmpeg_command: '-f lavfi -i testsrc=d=1:s=160x120 {{out_1}}', output_files: { out_1: 'o.mp4' } };

async function directAll(): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) {
        const out = join(scratch, `out-${next++}.mp4`);
        await run('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...directArgs(out)]);
        await run('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', out]);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

async function serviceAll(api: ApiClient): Promise<number> {
  const t0 = performance.now();
  const ids = await Promise.all(Array.from({ length: count }, () => api.submit(submission)));
  // One list request every 100 ms tells the state of all of them, as a client watching a batch would
  // do (a poll per command would load the machine the baseline has to itself).
  const pending = new Set(ids);
  while (pending.size > 0) {
    const res = await api.get(`/v1/commands?limit=${Math.min(1000, count)}`);
    for (const item of res.body as { command_id: string; status: string }[]) {
      if (!pending.has(item.command_id)) continue;
      if (item.status === 'FAILED') throw new Error(JSON.stringify(item));
      if (item.status === 'SUCCESS') pending.delete(item.command_id);
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 100));
  }
  return (performance.now() - t0) / 1000;
}

const svc = await startServiceProcess({ compiled: true, env: media ? { FFOP_ALLOW_ADDRESSES: media.allowEntry } : {} });
try {
  const direct = await directAll();
  const service = await serviceAll(new ApiClient(svc.url, svc.key));
  console.log(
    `${count} ${workload} commands queued at once: service ${service.toFixed(1)} s (${(count / service).toFixed(1)} per s), ` +
      `direct ffmpeg + ffprobe ${lanes} at a time ${direct.toFixed(1)} s (${(count / direct).toFixed(1)} per s), ` +
      `ratio ${(service / direct).toFixed(2)}x`,
  );
  reportRow(
    media
      ? {
          what: `${count} clip commands (as above) submitted at once, until all SUCCESS`,
          service: `${service.toFixed(1)} s`,
          baseline: `${direct.toFixed(1)} s (direct, ${lanes} at a time)`,
          ratio: `${(service / direct).toFixed(2)}x`,
          goal: '<= 1.10x',
        }
      : {
          what: `${count} cheap commands (1 s testsrc at 160x120, default vCPUs) queued at once`,
          service: `${(count / service).toFixed(1)} per s`,
          baseline: `${(count / direct).toFixed(1)} per s (direct, ${lanes} at a time)`,
          ratio: `${(service / direct).toFixed(2)}x the direct time`,
          goal: '>= 5 per s',
        },
  );
} finally {
  await svc.close();
  await media?.close();
  await rm(scratch, { recursive: true, force: true });
}
