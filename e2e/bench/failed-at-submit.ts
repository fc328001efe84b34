// Benchmark: what a command that ffmpeg would stop on costs. Ended at submit (the service's choice:
// an unknown filter, option or format, a graph ffmpeg cannot read), against the two other ways to get
// ffmpeg's message: running the command as any other (download, then a confined ffmpeg that fails),
// and one confined ffmpeg run on no inputs. Interleaved runs on one embedded service; prints medians.
// Run: npx tsx e2e/bench/failed-at-submit.ts [runs]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnPrepared } from '../../core/confine/confinement.ts';
import { testConfinement } from '../../core/confine/testing/test-confinement.ts';
import { makeClip, startMediaServer, startService, type ApiClient } from '../harness.ts';
import { median } from './stats.ts';

const runs = Number(process.argv[2] ?? 10);
const limits = { memoryBytes: 4 * 1024 ** 3, cpuSeconds: 60, fileSizeBytes: 1024 ** 3, openFiles: 1024, processes: 1024 };

/** Milliseconds from the submit until a poll shows the command FAILED (polls 20 ms apart, Retry-After honoured). */
async function submitToFailed(api: ApiClient, body: unknown): Promise<number> {
  const started = performance.now();
  const id = await api.submit(body);
  for (;;) {
    const res = await api.get(`/v1/commands/${id}`);
    if (res.status === 429) {
      await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
      continue;
    }
    if (res.body.status === 'FAILED') return performance.now() - started;
    if (res.body.status === 'SUCCESS') throw new Error(`${id} succeeded`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const media = await startMediaServer((dir) => makeClip(dir, 'video.mp4', 2));
const svc = await startService({ allow: [media.allowEntry] });
const { confinement, uids } = await testConfinement();
const folder = await mkdtemp(join(tmpdir(), 'failed-at-submit-bench-'));
const samples: Record<string, number[]> = { atSubmit: [], ranFfmpeg: [], confinedNoInputs: [] };
try {
  const api = svc.client();
  const input = { in_1: `${media.url}/video.mp4` };
  const confinedNoInputs = async () => {
    const uid = uids?.acquire();
    const started = performance.now();
    const args = ['-hide_banner', '-nostdin', '-filter_complex', 'nosuchfilter', '-f', 'null', '-'];
    const child = spawnPrepared(confinement.prepare({ program: 'ffmpeg', args, folder, writable: false, uid, limits }));
    child.stdout!.resume();
    child.stderr!.resume();
    await new Promise((resolve) => child.once('close', resolve));
    if (uid !== undefined) uids?.release(uid);
    return performance.now() - started;
  };
  for (let i = 0; i < runs; i++) {
    const body = (ffmpeg_command: string) => ({ ffmpeg_command, input_files: input, output_files: { out_1: 'o.mp4' }, vcpu_count: 1 });
    samples.atSubmit.push(await submitToFailed(api, body('-i {{in_1}} -vf nosuchfilter {{out_1}}')));
    samples.ranFfmpeg.push(await submitToFailed(api, body('-i {{in_1}} -c:v nosuchencoder {{out_1}}')));
    samples.confinedNoInputs.push(await confinedNoInputs());
  }
} finally {
  await svc.close();
  await media.close();
  await rm(folder, { recursive: true, force: true });
}
console.log(`a command ffmpeg stops on, median of ${runs} interleaved runs (${confinement.kind}):`);
console.log(`  ended at submit (the service):              ${median(samples.atSubmit).toFixed(1)} ms from submit to FAILED`);
console.log(`  run as any command (download + ffmpeg):     ${median(samples.ranFfmpeg).toFixed(1)} ms from submit to FAILED`);
console.log(`  one confined ffmpeg on no inputs (process): ${median(samples.confinedNoInputs).toFixed(1)} ms`);
