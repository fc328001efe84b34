// Benchmark: what confinement adds to one ffmpeg run and one ffprobe run. Each command runs the same
// number of times with the real bubblewrap sandbox and without it (both through prlimit, with the same
// limits), interleaved so that both see the same machine; prints the medians and their difference.
// A third way is timed from the moment it is let go: confined, started ahead and held at the start
// gate until its libraries are loaded (core/confine/program-start.ts), as runners start them.
// Run: npx tsx e2e/bench/confinement-cost.ts [runs]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ChildProcess } from 'node:child_process';
import { spawnPrepared, Unconfined, type Confinement } from '../../core/confine/confinement.ts';
import { ProgramStart } from '../../core/confine/program-start.ts';
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
  return finished(program, spawnPrepared(confinement.prepare({ program, args, folder, writable: true, uid, limits })), started);
}

/** Started ahead and held until loaded; timed from the moment it is let go. */
async function timeHeld(
  confinement: Confinement,
  folder: string,
  uid: number | undefined,
  program: string,
  args: string[],
): Promise<number> {
  const start = ProgramStart.ahead(confinement, { program, args, folder, writable: true, uid, limits });
  if (!(await start.ready())) throw new Error(`${program}: this confinement does not hold starts (is the start gate built?)`);
  const started = performance.now();
  return finished(program, await start.go(), started);
}

async function finished(program: string, child: ChildProcess, started: number): Promise<number> {
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
const samples: Record<string, number[]> = {};
for (const program of ['ffmpeg', 'ffprobe']) for (const way of ['bwrap', 'plain', 'held']) samples[`${program} ${way}`] = [];
try {
  await time(confinement, folder, uid, 'ffmpeg', encode); // warm the page cache
  for (let i = 0; i < runs; i++) {
    samples['ffmpeg bwrap'].push(await time(confinement, folder, uid, 'ffmpeg', encode));
    samples['ffmpeg plain'].push(await time(plain, folder, undefined, 'ffmpeg', encode));
    samples['ffmpeg held'].push(await timeHeld(confinement, folder, uid, 'ffmpeg', encode));
    samples['ffprobe bwrap'].push(await time(confinement, folder, uid, 'ffprobe', probe));
    samples['ffprobe plain'].push(await time(plain, folder, undefined, 'ffprobe', probe));
    samples['ffprobe held'].push(await timeHeld(confinement, folder, uid, 'ffprobe', probe));
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
      `cost ${(confined - unconfined).toFixed(1)} ms; confined and started ahead, from the moment it is let go: ` +
      `${median(samples[`${program} held`]).toFixed(1)} ms`,
  );
}
console.log(`  ffmpeg: ffmpeg ${encode.join(' ')}`);
console.log(`  ffprobe: ffprobe ${probe.join(' ')}`);
