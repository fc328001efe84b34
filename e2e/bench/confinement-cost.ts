// Benchmark: what confinement adds to one ffmpeg run and one ffprobe run. Each command runs the same
// number of times with the real bubblewrap sandbox and without it (both through prlimit, with the same
// limits), interleaved so that both see the same machine; prints the medians and their difference.
// Run: npx tsx e2e/bench/confinement-cost.ts [runs]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnPrepared, Unconfined, type Confinement } from '../../core/confine/confinement.ts';
import { handOver } from '../../core/confine/hand-over.ts';
import { testConfinement } from '../../core/confine/testing/test-confinement.ts';
import { median } from './stats.ts';

const runs = Number(process.argv[2] ?? 20);
const limits = { memoryBytes: 4 * 1024 ** 3, cpuSeconds: 600, fileSizeBytes: 1024 ** 3, openFiles: 1024, processes: 1024 };
// A short encode (the cost is per process, so a short command shows it best) and a probe of its output.
const encode = [
  '-hide_banner',
  '-nostdin',
  '-loglevel',
  'error',
  '-f',
  'lavfi',
  '-i',
  'testsrc=size=160x120:rate=25:duration=1',
  '-c:v',
  'libx264',
  '-preset',
  'veryfast',
  '-y',
  'out.mp4',
];
const probe = ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', 'out.mp4'];

async function time(confinement: Confinement, folder: string, uid: number | undefined, program: string, args: string[]): Promise<number> {
  const started = performance.now();
  const child = spawnPrepared(confinement.prepare({ program, args, folder, writable: true, uid, limits }));
  child.stdout!.resume();
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`${program} failed: ${stderr}`);
  return performance.now() - started;
}

const { confinement, uids } = await testConfinement();
const uid = uids?.acquire();
const folder = await mkdtemp(join(tmpdir(), 'confinement-bench-'));
if (uid !== undefined) await handOver(folder, uid);
const plain = new Unconfined();
const samples: Record<string, number[]> = { 'ffmpeg bwrap': [], 'ffmpeg plain': [], 'ffprobe bwrap': [], 'ffprobe plain': [] };
try {
  await time(confinement, folder, uid, 'ffmpeg', encode); // warm the page cache
  for (let i = 0; i < runs; i++) {
    samples['ffmpeg bwrap'].push(await time(confinement, folder, uid, 'ffmpeg', encode));
    samples['ffmpeg plain'].push(await time(plain, folder, undefined, 'ffmpeg', encode));
    samples['ffprobe bwrap'].push(await time(confinement, folder, uid, 'ffprobe', probe));
    samples['ffprobe plain'].push(await time(plain, folder, undefined, 'ffprobe', probe));
  }
} finally {
  await rm(folder, { recursive: true, force: true });
}
console.log(`confinement cost, median of ${runs} interleaved runs (${confinement.kind}${uid === undefined ? '' : ', own uid'}):`);
for (const program of ['ffmpeg', 'ffprobe']) {
  const confined = median(samples[`${program} bwrap`]);
  const unconfined = median(samples[`${program} plain`]);
  console.log(
    `  ${program.padEnd(8)} confined ${confined.toFixed(1)} ms, unconfined ${unconfined.toFixed(1)} ms, ` +
      `cost ${(confined - unconfined).toFixed(1)} ms`,
  );
}
console.log(`  ffmpeg: ffmpeg ${encode.join(' ')}`);
console.log(`  ffprobe: ffprobe ${probe.join(' ')}`);
