// Benchmark: many commands submitted together, from the first submit until all SUCCESS, against the
// same ffmpeg + ffprobe runs made directly, as many at a time as the machine has cores, in the same run.
//   cheap  1 s testsrc encoded at 160x120, vcpu_count 1, submitted by 20 clients (keep-alive
//          connections) while the service already drains them: also each submit's latency
//   clip   a 3 s 320x240 clip (from a local HTTP server) scaled to 160x120 with vcpu_count 1, all
//          submitted at once
// The account is on a plan whose limits do not bind. With --rounds=N both sides run N times, in turns
// that alternate which goes first (a run right after another is slower, whichever it is), and the row
// gives the medians and the median of the rounds' ratios.
// Run: npm run bench:queued -- [count=100] [cheap|clip] [--rounds=N]
import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, makeClip, startMediaServer, startServiceProcess } from '../harness.ts';
import { KeepAliveClient, submitFromClients } from './keep-alive-client.ts';
import { median, processCpuSeconds, quantile, reportRow } from './stats.ts';
import { unlimitedPlan } from './unlimited-plan.ts';

const run = promisify(execFile);
const count = Number(process.argv[2] ?? 100);
const workload = process.argv[3] === 'clip' ? 'clip' : 'cheap';
const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice('--rounds='.length) ?? 1);
if (!Number.isSafeInteger(rounds) || rounds < 1) throw new Error('--rounds takes a whole number of rounds, at least 1');
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
  : { ffmpeg_command: '-f lavfi -i testsrc=d=1:s=160x120 {{out_1}}', output_files: { out_1: 'o.mp4' }, vcpu_count: 1 };
/** Clients that submit the cheap commands, each its next as soon as the last is answered. */
const SUBMITTING_CLIENTS = 20;

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

/** Seconds from the first submit until all SUCCESS, and each submit's latency (ms). */
async function serviceAll(api: ApiClient, submitter: KeepAliveClient): Promise<{ seconds: number; submitMs: number[] }> {
  const t0 = performance.now();
  const submitMs: number[] = [];
  let ids: string[];
  if (media) ids = await Promise.all(Array.from({ length: count }, () => api.submit(submission)));
  else {
    ids = [];
    await submitFromClients(submitter, JSON.stringify(submission), { count, clients: SUBMITTING_CLIENTS, ids, submitMs });
  }
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
  return { seconds: (performance.now() - t0) / 1000, submitMs };
}

const svc = await startServiceProcess({ compiled: true, env: media ? { FFOP_ALLOW_ADDRESSES: media.allowEntry } : {} });
try {
  await unlimitedPlan(svc);
  const api = new ApiClient(svc.url, svc.key);
  // A first command runs before the clock starts, as in a service that has run for a while: its code is
  // compiled and its runners started.
  await api.waitForEnd(await api.submit(submission));
  const results: { direct: number; service: number }[] = [];
  const submitMs: number[] = [];
  const submitter = new KeepAliveClient(svc.url, svc.key);
  for (let round = 0; round < rounds; round++) {
    const serviceRun = async () => {
      const cpuBefore = await processCpuSeconds(svc.pid);
      const ran = await serviceAll(api, submitter);
      submitMs.push(...ran.submitMs);
      return { seconds: ran.seconds, cpu: (await processCpuSeconds(svc.pid)) - cpuBefore };
    };
    let direct: number;
    let service: { seconds: number; cpu: number };
    if (round % 2 === 0) {
      direct = await directAll();
      service = await serviceRun();
    } else {
      service = await serviceRun();
      direct = await directAll();
    }
    results.push({ direct, service: service.seconds });
    console.log(
      `${count} ${workload} commands${rounds > 1 ? ` (round ${round + 1} of ${rounds}, ${round % 2 === 0 ? 'direct' : 'service'} first)` : ''}: ` +
        `service ${service.seconds.toFixed(1)} s (${(count / service.seconds).toFixed(1)} per s), ` +
        `direct ffmpeg + ffprobe ${lanes} at a time ${direct.toFixed(1)} s (${(count / direct).toFixed(1)} per s), ` +
        `ratio ${(service.seconds / direct).toFixed(2)}x`,
    );
    // The service process's own CPU (not its runners'): what it costs per command, steadier than the ratio.
    console.log(
      `  the service process used ${service.cpu.toFixed(2)} s of CPU: ${((service.cpu / count) * 1000).toFixed(0)} ms per command`,
    );
  }
  submitter.close();
  const service = median(results.map((r) => r.service));
  const direct = median(results.map((r) => r.direct));
  const of = rounds > 1 ? `, medians of ${rounds} rounds` : '';
  if (media) {
    reportRow({
      what: `${count} clip commands (as above) submitted at once, until all SUCCESS${of}`,
      service: `${service.toFixed(1)} s`,
      baseline: `${direct.toFixed(1)} s (direct, ${lanes} at a time)`,
      ratio: `${median(results.map((r) => r.service / r.direct)).toFixed(2)}x`,
      goal: '<= 1.25x',
    });
  } else {
    const [p50, p99] = [quantile(submitMs, 0.5), quantile(submitMs, 0.99)];
    console.log(`  their submits from ${SUBMITTING_CLIENTS} clients while they drain: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`);
    reportRow({
      what: `${count} cheap commands (1 s testsrc at 160x120, vcpu_count 1) from ${SUBMITTING_CLIENTS} clients, until all SUCCESS${of}`,
      service: `${(count / service).toFixed(1)} per s`,
      baseline: `${(count / direct).toFixed(1)} per s (direct, ${lanes} at a time)`,
      ratio: `${median(results.map((r) => r.direct / r.service)).toFixed(2)}x the direct rate`,
      goal: '>= 0.5x',
    });
    reportRow({
      what: `their ${count * rounds} submits from ${SUBMITTING_CLIENTS} clients while they drain`,
      service: `p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`,
      baseline: '-',
      ratio: '-',
      goal: 'p99 <= 100 ms',
    });
  }
} finally {
  await svc.close();
  await media?.close();
  await rm(scratch, { recursive: true, force: true });
}
