// Runs ffmpeg once: confined (core/confine), no shell, own process group, wall-clock timeout,
// progress from `-progress pipe:1` (with the inputs' durations ffmpeg printed on stderr), and only the
// tail of stderr kept.

import { constants } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Confinement } from '../confine/confinement.ts';
import { ProgramStart } from '../confine/program-start.ts';
import type { ProcessLimits } from '../confine/limits.ts';
import { InputDurationReader } from './input-durations.ts';

export interface FfmpegProgress {
  outTimeSeconds: number;
  speed: number | null; // 1.5 for "1.5x"
  frame: number | null;
  /** Each input's duration as ffmpeg printed it (index: the input's), null where unknown. */
  inputDurations: (number | null)[];
}

/** What ffmpeg runs with, set before it starts (ffmpegStart). */
export interface FfmpegStartOptions {
  argv: string[];
  /** The working folder: the only one ffmpeg sees, and its current folder (argv names files relative to it). */
  folder: string;
  confinement: Confinement;
  limits: ProcessLimits;
  /** As root: the uid ffmpeg runs as (the folder belongs to it). */
  uid?: number;
  ffmpegPath?: string; // default 'ffmpeg'
}

/**
 * ffmpeg started ahead and held before main() where the confinement can (program-start.ts): its
 * sandbox and libraries load while the inputs still download. Its files need not exist yet; it opens
 * them once let go. Cancel it if it will not run.
 */
export function ffmpegStart(opts: FfmpegStartOptions): ProgramStart {
  return ProgramStart.ahead(opts.confinement, {
    program: opts.ffmpegPath ?? 'ffmpeg',
    args: opts.argv,
    folder: opts.folder,
    writable: true,
    uid: opts.uid,
    limits: opts.limits,
  });
}

export interface FfmpegRunOptions extends FfmpegStartOptions {
  /** Its start made ahead (ffmpegStart), with the same options; default: one made now. */
  start?: ProgramStart;
  /** Wall-clock limit, counted from the moment ffmpeg is let go. */
  timeoutSeconds: number;
  stderrTailBytes?: number; // default 4096: keep only the tail
  onProgress?: (p: FfmpegProgress) => void;
  /** Every chunk of ffmpeg's stderr as it comes (the command's log). */
  onStderr?: (chunk: Buffer) => void;
  signal?: AbortSignal; // abort = kill like a timeout but report aborted
  /** Time between SIGTERM and SIGKILL; default 2000 ms. */
  killGraceMs?: number;
}

export interface FfmpegRunResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  aborted: boolean;
  seconds: number;
  stderrTail: string;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

export async function runFfmpeg(opts: FfmpegRunOptions): Promise<FfmpegRunResult> {
  if (opts.signal?.aborted) {
    opts.start?.cancel();
    return { exitCode: null, signal: null, timedOut: false, aborted: true, seconds: 0, stderrTail: '' };
  }
  if (!(opts.timeoutSeconds > 0)) {
    opts.start?.cancel();
    throw new Error(`timeoutSeconds must be positive, got ${opts.timeoutSeconds}`);
  }
  const start = opts.start ?? ffmpegStart(opts);
  const child = await start.go(); // own process group, so a timeout can kill everything ffmpeg started
  // From the moment it is let go: what a held start loaded before is not ffmpeg's running time.
  const started = performance.now();
  const program = opts.ffmpegPath ?? 'ffmpeg';

  const stderr = new TailBuffer(opts.stderrTailBytes ?? 4096);
  const durations = new InputDurationReader();
  const progress = new ProgressReader(opts.onProgress, () => durations.durations());
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr.push(chunk);
    opts.onStderr?.(chunk);
    durations.push(chunk);
  });
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => progress.push(chunk));

  let timedOut = false;
  let aborted = false;
  let graceTimer: NodeJS.Timeout | undefined;
  const killGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  };
  const stop = (): void => {
    if (graceTimer) return;
    killGroup('SIGTERM');
    graceTimer = setTimeout(() => killGroup('SIGKILL'), opts.killGraceMs ?? 2000);
  };
  const timeoutTimer = setTimeout(
    () => {
      timedOut = true;
      stop();
    },
    Math.min(opts.timeoutSeconds * 1000, MAX_TIMER_MS),
  );
  const onAbort = (): void => {
    if (!timedOut) aborted = true;
    stop();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) onAbort(); // while it was being let go

  try {
    return await new Promise<FfmpegRunResult>((resolve, reject) => {
      let exit: { code: number | null; signal: string | null } | undefined;
      child.once('error', (err) => {
        // Only a failure to start leaves no exit to wait for.
        if (child.pid === undefined) reject(new Error(`cannot start ${program}: ${err.message}`));
      });
      child.once('exit', (code, signal) => {
        exit = { code, signal };
        // ffmpeg is gone; anything it left behind in its group goes too.
        killGroup('SIGKILL');
      });
      // 'close' comes after 'exit' and after stdout/stderr are drained.
      child.once('close', () => {
        if (!exit) return;
        progress.end();
        resolve({
          exitCode: exit.code,
          signal: exit.signal ?? signalOfWrapperExit(exit.code),
          timedOut,
          aborted,
          seconds: (performance.now() - started) / 1000,
          stderrTail: stderr.text(),
        });
      });
    });
  } finally {
    clearTimeout(timeoutTimer);
    clearTimeout(graceTimer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * A confined ffmpeg runs under bubblewrap, which outlives it and reports a child killed by a signal as
 * exit code 128 + the signal's number, as shells do. ffmpeg itself never exits above 128 but with 255.
 */
function signalOfWrapperExit(code: number | null): string | null {
  if (code === null || code <= 128 || code >= 255) return null;
  const found = Object.entries(constants.signals).find(([, number]) => number === code - 128);
  return found ? found[0] : null;
}

/** Keeps the last `capacity` bytes written. */
class TailBuffer {
  private readonly capacity: number;
  private data = Buffer.alloc(0);

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  push(chunk: Buffer): void {
    const joined = Buffer.concat([this.data, chunk]);
    this.data = joined.length > this.capacity ? joined.subarray(joined.length - this.capacity) : joined;
  }

  text(): string {
    return this.data.toString('utf8');
  }
}

/**
 * Reads ffmpeg's `-progress` report: blocks of key=value lines, each ended by
 * `progress=continue` or `progress=end`. out_time_us and (despite its name) out_time_ms are both
 * microseconds; speed looks like "1.5x" or "N/A".
 */
class ProgressReader {
  private readonly onProgress: ((p: FfmpegProgress) => void) | undefined;
  private readonly inputDurations: () => (number | null)[];
  private partialLine = '';
  private block = new Map<string, string>();

  constructor(onProgress: ((p: FfmpegProgress) => void) | undefined, inputDurations: () => (number | null)[]) {
    this.onProgress = onProgress;
    this.inputDurations = inputDurations;
  }

  push(chunk: string): void {
    const lines = (this.partialLine + chunk).split('\n');
    // ffmpeg's lines are short; a runaway line is dropped rather than buffered without end.
    const last = lines.pop() ?? '';
    this.partialLine = last.length > 4096 ? '' : last;
    for (const line of lines) this.line(line.trim());
  }

  end(): void {
    this.line(this.partialLine.trim());
    this.partialLine = '';
  }

  private line(line: string): void {
    const eq = line.indexOf('=');
    if (eq <= 0) return;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1).trim();
    if (key !== 'progress') {
      this.block.set(key, value);
      return;
    }
    const block = this.block;
    this.block = new Map();
    const micros = numberOrNull(block.get('out_time_us')) ?? numberOrNull(block.get('out_time_ms'));
    if (micros === null || micros < 0 || !this.onProgress) return;
    const speed = numberOrNull(block.get('speed')?.replace(/x$/, ''));
    const frame = numberOrNull(block.get('frame'));
    try {
      this.onProgress({ outTimeSeconds: micros / 1e6, speed, frame, inputDurations: this.inputDurations() });
    } catch {
      // Progress is advisory: a failing listener must not take the run (or the process) down.
    }
  }
}

function numberOrNull(value: string | undefined): number | null {
  if (value === undefined || value === '' || value === 'N/A') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}
