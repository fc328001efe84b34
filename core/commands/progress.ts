// A running command's progress: what the reconciler keeps of a runner's progress event, and what a
// poll and the FfmpegCommand status show of it. A runner's events are not trusted (in cluster mode a
// hostile command can post its own with the Job's token): only finite, non-negative numbers are kept.
import type { CommandProgress } from '../db/schema.ts';
import { CommandStatus } from './command-status.ts';

/** About 31 years: any number of seconds beyond is nonsense. */
const MAX_SECONDS = 1e9;

function seconds(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= MAX_SECONDS ? value : null;
}

/** What is stored of a progress event; null when it holds no usable out time. */
export function storedProgress(event: { outTimeSeconds?: unknown; speed?: unknown; durationSeconds?: unknown }): CommandProgress | null {
  const outTimeSeconds = seconds(event.outTimeSeconds);
  if (outTimeSeconds === null) return null;
  const durationSeconds = seconds(event.durationSeconds);
  return { outTimeSeconds, speed: seconds(event.speed), durationSeconds: durationSeconds === 0 ? null : durationSeconds };
}

export interface ProgressView {
  /** out time / duration, clamped to 0..100, one decimal; null when the duration is unknown. */
  percent: number | null;
  outTimeSeconds: number;
  speed: number | null;
}

const round = (x: number, digits: number) => Number(x.toFixed(digits));

/** The progress a command shows: only while PROCESSING and once ffmpeg has reported. */
export function progressView(command: { status: string; progress: CommandProgress | null }): ProgressView | null {
  if (command.status !== CommandStatus.PROCESSING || !command.progress) return null;
  // Checked again: the row may hold what an older version or a hand wrote.
  const p = storedProgress(command.progress);
  if (!p) return null;
  const percent = p.durationSeconds === null ? null : round(Math.min(100, (p.outTimeSeconds / p.durationSeconds) * 100), 1);
  return { percent, outTimeSeconds: round(p.outTimeSeconds, 3), speed: p.speed === null ? null : round(p.speed, 3) };
}
