// Benchmark: many cheap commands queued at once (1 s testsrc encoded at 160x120, default vCPUs), from
// submit until all SUCCESS, against the same ffmpeg + ffprobe runs made directly, two at a time (this
// machine's cores), in the same run. Run: npx tsx e2e/bench/queued-commands.ts [count]
import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, startServiceProcess } from '../harness.ts';

const run = promisify(execFile);
const count = Number(process.argv[2] ?? 100);
const lanes = availableParallelism();
const scratch = await mkdtemp(join(tmpdir(), 'bench-queued-'));

async function directAll(): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < count) {
      const out = join(scratch, `out-${next++}.mp4`);
      await run('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=d=1:s=160x120', out]);
      await run('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', out]);
    }
  }));
  return (performance.now() - t0) / 1000;
}

async function serviceAll(api: ApiClient): Promise<number> {
  const t0 = performance.now();
  const ids = await Promise.all(Array.from({ length: count }, () => api.submit({ ffmpeg_command: '-f lavfi -i testsrc=d=1:s=160x120 {{out_1}}', output_files: { out_1: 'o.mp4' } })));
  const pending = new Set(ids);
  while (pending.size > 0) {
    for (const id of [...pending]) {
      const res = await api.get(`/v1/commands/${id}`);
      if (res.body.status === 'FAILED') throw new Error(JSON.stringify(res.body));
      if (res.body.status === 'SUCCESS') pending.delete(id);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return (performance.now() - t0) / 1000;
}

const svc = await startServiceProcess({ compiled: true });
try {
  const direct = await directAll();
  const service = await serviceAll(new ApiClient(svc.url, svc.key));
  console.log(`${count} cheap commands queued at once: service ${service.toFixed(1)} s (${(count / service).toFixed(1)} per s), ` +
    `direct ffmpeg + ffprobe ${lanes} at a time ${direct.toFixed(1)} s (${(count / direct).toFixed(1)} per s), ratio ${(service / direct).toFixed(2)}x`);
} finally {
  await svc.close();
  await rm(scratch, { recursive: true, force: true });
}
