// Where a command's time went, step by step. Each step has four phases:
//   queued   from when the step could run (the command's creation for the first step, the end of the
//            step before for a later one) to when it started (its job was started, or released by the
//            cluster's queue; for a step sent back to the queue, its last start);
//   download the runner fetching the inputs and preparing them (DOWNLOADING, PREPARING_INPUT_FILES);
//   ffmpeg   ffmpeg's own run (what ffmpeg_command_run_seconds adds up);
//   upload   probing and storing the outputs (UPLOADING).
// The runner measures download, ffmpeg and upload itself and reports them with its result; the
// reconciler stores each ended step's timings in the same write as the result. The step that runs
// now shows its queued seconds only. The record's totals add up what is known so far.

/** One ended step, as stored in commands.timings (step is 0-based there). */
export interface StoredStepTiming {
  step: number;
  queuedSeconds: number | null;
  downloadSeconds: number | null;
  ffmpegSeconds: number | null;
  uploadSeconds: number | null;
  /** ISO time the step's result was stored: when the next step could run. */
  endedAt: string;
}

/** What the reconciler knows when a step's result is stored. */
export interface StepEnd {
  step: number;
  createdAt: Date;
  stepStartedAt: Date | null;
  timings: StoredStepTiming[] | null;
  /** As the runner reported them (older runners leave download and upload out). */
  downloadSeconds?: number | null;
  ffmpegSeconds?: number | null;
  uploadSeconds?: number | null;
}

/** The command's stored timings with this step's added (a step that ran again replaces its entry). */
export function withStepEnded(end: StepEnd, now: Date): StoredStepTiming[] {
  const earlier = (end.timings ?? []).filter((t) => t.step !== end.step);
  const readyAt = readyAtOf(end.step, end.createdAt, earlier);
  return [
    ...earlier,
    {
      step: end.step,
      queuedSeconds: readyAt && end.stepStartedAt ? secondsBetween(readyAt, end.stepStartedAt) : null,
      downloadSeconds: end.downloadSeconds ?? null,
      ffmpegSeconds: end.ffmpegSeconds ?? null,
      uploadSeconds: end.uploadSeconds ?? null,
      endedAt: now.toISOString(),
    },
  ];
}

export interface StepTimingView {
  /** 1-based, as steps are numbered for people. */
  step: number;
  queued_seconds: number | null;
  download_seconds: number | null;
  ffmpeg_seconds: number | null;
  upload_seconds: number | null;
}

export interface TimingsView {
  queued_seconds: number | null;
  download_seconds: number | null;
  ffmpeg_seconds: number | null;
  upload_seconds: number | null;
  steps: StepTimingView[];
}

/** What timings a command shows: its ended steps, then the current one if it has started. */
export function timingsView(c: {
  currentStep: number;
  createdAt: Date;
  stepStartedAt: Date | null;
  timings: StoredStepTiming[] | null;
}): TimingsView {
  const ended = [...(c.timings ?? [])].sort((a, b) => a.step - b.step);
  const raw: Omit<StoredStepTiming, 'endedAt'>[] = [...ended];
  if (c.stepStartedAt !== null && !ended.some((t) => t.step === c.currentStep)) {
    const readyAt = readyAtOf(c.currentStep, c.createdAt, ended);
    raw.push({
      step: c.currentStep,
      queuedSeconds: readyAt ? secondsBetween(readyAt, c.stepStartedAt) : null,
      downloadSeconds: null,
      ffmpegSeconds: null,
      uploadSeconds: null,
    });
  }
  return {
    queued_seconds: total(raw.map((t) => t.queuedSeconds)),
    download_seconds: total(raw.map((t) => t.downloadSeconds)),
    ffmpeg_seconds: total(raw.map((t) => t.ffmpegSeconds)),
    upload_seconds: total(raw.map((t) => t.uploadSeconds)),
    steps: raw.map((t) => ({
      step: t.step + 1,
      queued_seconds: rounded(t.queuedSeconds),
      download_seconds: rounded(t.downloadSeconds),
      ffmpeg_seconds: rounded(t.ffmpegSeconds),
      upload_seconds: rounded(t.uploadSeconds),
    })),
  };
}

/** The sum of the known values, rounded; null when none is known. Added unrounded, in step order, as ffmpeg_command_run_seconds is. */
export function total(values: (number | null)[]): number | null {
  const known = values.filter((x): x is number => x !== null && Number.isFinite(x));
  return known.length === 0 ? null : rounded(known.reduce((sum, x) => sum + x, 0));
}

/** When step `step` could run: the command's creation, or the end of the step before (null if unknown). */
function readyAtOf(step: number, createdAt: Date, ended: StoredStepTiming[]): Date | null {
  if (step === 0) return createdAt;
  const before = ended.find((t) => t.step === step - 1);
  return before ? new Date(before.endedAt) : null;
}

/** Seconds from `from` to `to`; never negative (clocks of different processes may disagree a little). */
function secondsBetween(from: Date, to: Date): number {
  return Math.max(0, (to.getTime() - from.getTime()) / 1000);
}

function rounded(x: number | null): number | null {
  return x === null ? null : Number(x.toFixed(3));
}
