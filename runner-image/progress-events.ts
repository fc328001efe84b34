// The progress events of one ffmpeg run: each carries the length the output is expected to reach (a
// percentage's base), and at most one goes out per MIN_INTERVAL_MS whatever -stats_period the command
// sets, so a job never sends more than about two a second. The last report, if it was held back, goes
// out when ffmpeg ends (flush), so the figures shown during the upload are ffmpeg's final ones.
import type { ParsedCommand } from '../core/command-line/parsed-command.ts';
import type { RunnerEvent } from '../core/jobs/step-spec.ts';
import { expectedDurationSeconds } from '../core/media/expected-duration.ts';
import type { FfmpegProgress } from '../core/media/run-ffmpeg.ts';

export const MIN_INTERVAL_MS = 450;

export interface ProgressEvents {
  onProgress: (progress: FfmpegProgress) => void;
  flush: () => void;
}

export function progressEvents(
  command: ParsedCommand,
  emit: (event: RunnerEvent) => void,
  now: () => number = () => performance.now(),
): ProgressEvents {
  let last = -Infinity;
  let heldBack: FfmpegProgress | null = null;
  const send = (p: FfmpegProgress) => {
    heldBack = null;
    const durationSeconds = expectedDurationSeconds(command, p.inputDurations);
    emit({ type: 'progress', outTimeSeconds: p.outTimeSeconds, speed: p.speed, durationSeconds });
  };
  return {
    onProgress: (p) => {
      const at = now();
      if (at - last < MIN_INTERVAL_MS) {
        heldBack = p;
        return;
      }
      last = at;
      send(p);
    },
    flush: () => {
      if (heldBack) send(heldBack);
    },
  };
}
