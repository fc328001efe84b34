// The runner: one command or chain step, in a fresh working folder.
// DOWNLOADING -> PREPARING_INPUT_FILES -> FFMPEG_PROCESSING -> UPLOADING, then one result event.
import { chown, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorStatus } from '../core/commands/error-status.ts';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { ProcessingStage } from '../core/jobs/step-spec.ts';
import { buildFfmpegArgv } from '../core/media/ffmpeg-args.ts';
import { runFfmpeg } from '../core/media/run-ffmpeg.ts';
import { NOBODY_UID, type SandboxMode } from '../core/media/sandbox.ts';
import { downloadInputs, extractArchive, INPUT_DIR, OUTPUT_DIR } from './inputs.ts';
import { collectOutputs, listFiles } from './outputs.ts';
import { StepFailure } from './step-failure.ts';

export interface RunStepOptions {
  workRoot: string;
  emit: (event: RunnerEvent) => void;
  signal: AbortSignal;
  sandbox: SandboxMode;
  ffmpegPath?: string;
  ffprobePath?: string;
  /** rlimit on each file ffmpeg writes. */
  maxOutputFileBytes?: number;
}

export async function runStep(spec: StepSpec, o: RunStepOptions): Promise<void> {
  await mkdir(o.workRoot, { recursive: true });
  const dir = await mkdtemp(join(o.workRoot, 'step-'));
  let inputBytes = 0;
  let ffmpegSeconds: number | null = null;
  try {
    o.emit({ type: 'stage', stage: ProcessingStage.DOWNLOADING });
    const inputs = await downloadInputs(spec, dir, o.signal);
    inputBytes = inputs.bytes;

    o.emit({ type: 'stage', stage: ProcessingStage.PREPARING_INPUT_FILES });
    if (inputs.archivePath) await extractArchive(dir, inputs.archivePath, spec.download.maxBytes);
    const paths = new Map(inputs.paths);
    for (const output of spec.outputs) {
      if (output.kind === 'folder') continue;
      await mkdir(join(dir, OUTPUT_DIR, output.alias), { recursive: true });
      paths.set(output.alias, join(OUTPUT_DIR, output.alias, output.fileName));
    }
    const argv = buildFfmpegArgv(spec.command, (alias) => {
      const path = paths.get(alias);
      if (!path) throw new Error(`no local file for ${alias}`);
      return path;
    }, { threads: spec.threads });
    // What is there before ffmpeg runs is not "produced" (OUTPUT_FOLDER).
    const before = await listFiles(dir, [INPUT_DIR, OUTPUT_DIR]);
    if (o.sandbox === 'netns-nobody') await handOver(dir, NOBODY_UID);

    o.emit({ type: 'stage', stage: ProcessingStage.FFMPEG_PROCESSING });
    const run = await runFfmpeg({
      argv,
      cwd: dir,
      timeoutSeconds: spec.timeoutSeconds,
      ffmpegPath: o.ffmpegPath,
      sandbox: o.sandbox,
      signal: o.signal,
      limits: o.maxOutputFileBytes ? { fileSizeBytes: o.maxOutputFileBytes } : undefined,
      onProgress: (p) => o.emit({ type: 'progress', outTimeSeconds: p.outTimeSeconds, speed: p.speed }),
    });
    ffmpegSeconds = run.seconds;
    if (run.timedOut) {
      throw new StepFailure(ErrorStatus.FFMPEG_TIMEOUT, `ffmpeg ran longer than max_command_run_seconds (${spec.timeoutSeconds} s) and was stopped`);
    }
    if (run.aborted) throw new StepFailure(ErrorStatus.INTERRUPTED, 'the step was cancelled while ffmpeg ran');
    if (run.exitCode !== 0) {
      const how = run.signal ? `was killed by ${run.signal}` : `exited with code ${run.exitCode}`;
      throw new StepFailure(ErrorStatus.FFMPEG_FAILED, `ffmpeg ${how}: ${lastLines(run.stderrTail)}`);
    }

    o.emit({ type: 'stage', stage: ProcessingStage.UPLOADING });
    const outputs = await collectOutputs(spec.outputs, dir, before, { signal: o.signal, ffprobePath: o.ffprobePath });
    o.emit({ type: 'result', ok: true, ffmpegSeconds, inputBytes, outputs });
  } catch (err) {
    // Stopped from outside (deadline, deletion, shutdown): whoever stopped it knows why, and its
    // account of the failure (e.g. DEADLINE_EXCEEDED) must not be overtaken by ours.
    if (o.signal.aborted) return;
    const failure =
      err instanceof StepFailure ? err : new StepFailure(ErrorStatus.INTERNAL_ERROR, `runner error: ${(err as Error).message}`);
    o.emit({ type: 'result', ok: false, errorStatus: failure.errorStatus, errorMessage: failure.message, ffmpegSeconds, inputBytes });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Gives the working folder to the uid ffmpeg runs as (the runner, root, can still read everything). */
async function handOver(dir: string, uid: number): Promise<void> {
  for (const entry of await readdir(dir, { recursive: true })) await chown(join(dir, entry), uid, uid);
  await chown(dir, uid, uid);
}

/** The last lines of ffmpeg's stderr: where it says what went wrong. */
function lastLines(text: string): string {
  return text.trim().split('\n').slice(-8).join('\n').slice(-1500);
}
