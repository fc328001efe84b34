// The runner: one command or chain step, in a fresh working folder.
// DOWNLOADING -> PREPARING_INPUT_FILES -> FFMPEG_PROCESSING -> UPLOADING, then one result event.
// ffmpeg starts loading while the inputs download, and each output's ffprobe while ffmpeg runs: both
// held before main() until their files are there (core/confine/program-start.ts).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ErrorStatus } from '../core/commands/error-status.ts';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_OUTPUT_FILES, ProcessingStage } from '../core/jobs/step-spec.ts';
import { buildFfmpegArgv } from '../core/media/ffmpeg-args.ts';
import { ffmpegStart, runFfmpeg, type FfmpegRunResult } from '../core/media/run-ffmpeg.ts';
import type { Confinement } from '../core/confine/confinement.ts';
import type { ProgramStart } from '../core/confine/program-start.ts';
import { handOver } from '../core/confine/hand-over.ts';
import { DEFAULT_MEMORY_BYTES, DEFAULT_OPEN_FILES, DEFAULT_PROCESSES } from '../core/confine/limits.ts';
import { FileProber } from '../core/media/file-prober.ts';
import { downloadInputs, extractArchive, INPUT_DIR, inputPaths, OUTPUT_DIR } from './inputs.ts';
import { collectOutputs, listFiles, type PlanUpload } from './outputs.ts';
import { StepFailure } from './step-failure.ts';
import { ffmpegRanOutOfSpace, isOutOfSpace, outOfSpaceMessage } from '../core/storage/out-of-space.ts';
import { ffmpegErrorText } from './ffmpeg-error.ts';
import { oomKillCount } from './memory-cgroup.ts';
import { progressEvents } from './progress-events.ts';
import { LogForwarder } from './log-forwarder.ts';
import { PhaseClock } from './phase-clock.ts';
import { startWriteBehind } from './write-behind.ts';

export interface RunStepOptions {
  workRoot: string;
  emit: (event: RunnerEvent) => void;
  signal: AbortSignal;
  /** Every ffmpeg and ffprobe run of the step goes through it. */
  confinement: Confinement;
  /** As root: the step's own uid, which gets the working folder. */
  uid?: number;
  ffmpegPath?: string;
  ffprobePath?: string;
  /** rlimit on each file ffmpeg writes; default 20 GiB. */
  maxOutputFileBytes?: number;
  /** rlimit on ffmpeg's and ffprobe's address space; default 4 GiB. */
  maxMemoryBytes?: number;
  /** Most files a playlist or OUTPUT_FOLDER output may hold; default 1000. */
  maxOutputFiles?: number;
  /** Cluster mode: the pod's memory limit as Kubernetes writes it (e.g. "4608Mi"), named when it kills ffmpeg. */
  podMemoryLimit?: string;
  /** Embedded mode: the local storage's hand-off folder, to store outputs without a second copy. */
  handoffDir?: string;
  /** Cluster mode: asks the API for a large output's multipart upload plan (upload-plans.ts). */
  planUpload?: PlanUpload;
}

/** Outputs whose probe starts ahead, at most (playlists and files; an OUTPUT_FOLDER is not probed). */
const PROBES_AHEAD = 4;

export async function runStep(spec: StepSpec, o: RunStepOptions): Promise<void> {
  await mkdir(o.workRoot, { recursive: true });
  const dir = await mkdtemp(join(o.workRoot, 'step-'));
  let inputBytes = 0;
  let ffmpegSeconds: number | null = null;
  const phases = new PhaseClock();
  const memoryBytes = o.maxMemoryBytes ?? DEFAULT_MEMORY_BYTES;
  const prober = new FileProber({ confinement: o.confinement, uid: o.uid, memoryBytes, ffprobePath: o.ffprobePath });
  let ffmpegAhead: ProgramStart | null = null;
  try {
    o.emit({ type: 'stage', stage: ProcessingStage.DOWNLOADING });
    phases.begin('download');
    // Every file the command names has a known place before anything is downloaded.
    const paths = inputPaths(spec);
    for (const output of spec.outputs) {
      if (output.kind === 'folder') continue;
      await mkdir(join(dir, OUTPUT_DIR, output.alias), { recursive: true });
      paths.set(output.alias, join(OUTPUT_DIR, output.alias, output.fileName));
    }
    const argv = buildFfmpegArgv(
      spec.command,
      (alias) => {
        const path = paths.get(alias);
        if (!path) throw new Error(`no local file for ${alias}`);
        return path;
      },
      { threads: spec.threads },
    );
    const ffmpegOptions = {
      argv,
      folder: dir,
      confinement: o.confinement,
      uid: o.uid,
      ffmpegPath: o.ffmpegPath,
      limits: {
        memoryBytes,
        // A backstop behind the wall-clock timeout: every core busy for the whole allowed time.
        cpuSeconds: Math.ceil(spec.timeoutSeconds * availableParallelism()) + 30,
        fileSizeBytes: o.maxOutputFileBytes ?? DEFAULT_MAX_OUTPUT_FILE_BYTES,
        openFiles: DEFAULT_OPEN_FILES,
        processes: DEFAULT_PROCESSES,
      },
    };
    ffmpegAhead = ffmpegStart(ffmpegOptions); // loads while the inputs download
    const inputs = await downloadInputs(spec, dir, o.signal);
    inputBytes = inputs.bytes;

    o.emit({ type: 'stage', stage: ProcessingStage.PREPARING_INPUT_FILES });
    if (inputs.archivePath) await extractArchive(dir, inputs.archivePath, spec.download.maxBytes);
    // What is there before ffmpeg runs is not "produced" (OUTPUT_FOLDER).
    const before = await listFiles(dir, [INPUT_DIR, OUTPUT_DIR]);
    if (o.uid !== undefined) await handOver(dir, o.uid);
    // Each output's probe loads while ffmpeg runs (a few at most: each holds its memory while it waits).
    for (const output of spec.outputs.filter((out) => out.kind !== 'folder').slice(0, PROBES_AHEAD)) {
      prober.startAhead(join(dir, OUTPUT_DIR, output.alias, output.fileName));
    }

    phases.end();
    o.emit({ type: 'stage', stage: ProcessingStage.FFMPEG_PROCESSING });
    // A kill by the pod's OOM killer shows as a higher count afterwards.
    const oomKillsBefore = o.podMemoryLimit ? await oomKillCount() : null;
    const progress = progressEvents(spec.command, o.emit);
    // ffmpeg's own output, for GET /v1/commands/{id}/log: paths of this machine written as "." and "<work>".
    const log = new LogForwarder({
      emit: o.emit,
      paths: [
        [dir, '.'],
        [o.workRoot, '<work>'],
      ],
    });
    // Local storage syncs an output before it stores it: large ones go to disk as ffmpeg writes them.
    const writeBehind = o.handoffDir ? startWriteBehind(outputFiles(spec, dir)) : null;
    const run = await runFfmpeg({
      ...ffmpegOptions,
      start: ffmpegAhead,
      timeoutSeconds: spec.timeoutSeconds,
      signal: o.signal,
      onProgress: progress.onProgress,
      onStderr: (chunk) => log.push(chunk),
    }).finally(async () => {
      log.end();
      await writeBehind?.stop();
    });
    ffmpegSeconds = run.seconds;
    progress.flush();
    if (run.timedOut) {
      throw new StepFailure(
        ErrorStatus.FFMPEG_TIMEOUT,
        `ffmpeg ran longer than max_command_run_seconds (${spec.timeoutSeconds} s) and was stopped`,
      );
    }
    if (run.aborted) throw new StepFailure(ErrorStatus.INTERRUPTED, 'the step was cancelled while ffmpeg ran');
    if (run.exitCode !== 0) {
      if (o.podMemoryLimit && ((await oomKillCount()) ?? 0) > (oomKillsBefore ?? Infinity)) {
        throw new StepFailure(
          ErrorStatus.FFMPEG_FAILED,
          `ffmpeg was killed for going over the step's memory limit of ${o.podMemoryLimit} ` +
            `(the runner pod's limit, FFOP_RUNNER_MEMORY_LIMIT): ${ffmpegErrorText(run.stderrTail)}`,
        );
      }
      if (ffmpegRanOutOfSpace(run.stderrTail)) {
        throw new StepFailure(ErrorStatus.OUT_OF_SPACE, outOfSpaceMessage('ffmpeg wrote its output', ffmpegErrorText(run.stderrTail)));
      }
      throw new StepFailure(
        ErrorStatus.FFMPEG_FAILED,
        ffmpegFailure(run, { memoryBytes, fileSizeBytes: o.maxOutputFileBytes ?? DEFAULT_MAX_OUTPUT_FILE_BYTES }),
      );
    }

    o.emit({ type: 'stage', stage: ProcessingStage.UPLOADING });
    phases.begin('upload');
    const outputs = await collectOutputs(spec.outputs, dir, before, {
      signal: o.signal,
      prober,
      maxFiles: o.maxOutputFiles ?? DEFAULT_MAX_OUTPUT_FILES,
      handoffDir: o.handoffDir,
      multipartMinBytes: spec.multipartMinBytes,
      planUpload: o.planUpload,
    });
    o.emit({ type: 'result', ok: true, ffmpegSeconds, inputBytes, outputs, ...phases.seconds() });
  } catch (err) {
    // Stopped from outside (deadline, deletion, shutdown): whoever stopped it knows why, and its
    // account of the failure (e.g. DEADLINE_EXCEEDED) must not be overtaken by ours.
    if (o.signal.aborted) return;
    const failure =
      err instanceof StepFailure
        ? err
        : isOutOfSpace(err)
          ? new StepFailure(ErrorStatus.OUT_OF_SPACE, outOfSpaceMessage('the step wrote its working files', (err as Error).message))
          : new StepFailure(ErrorStatus.INTERNAL_ERROR, `runner error: ${(err as Error).message}`);
    o.emit({
      type: 'result',
      ok: false,
      errorStatus: failure.errorStatus,
      errorMessage: failure.message,
      ffmpegSeconds,
      inputBytes,
      ...phases.seconds(),
    });
  } finally {
    // Held starts that were not let go (a failed download, ffmpeg failed): stopped before main().
    ffmpegAhead?.cancel();
    prober.cancelAhead();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Where ffmpeg writes the step's single-file outputs. */
function outputFiles(spec: StepSpec, dir: string): string[] {
  return spec.outputs.filter((output) => output.kind === 'file').map((output) => join(dir, OUTPUT_DIR, output.alias, output.fileName));
}

/** Why ffmpeg failed: a limit it hit, said plainly, then its own last lines. */
function ffmpegFailure(run: FfmpegRunResult, limits: { memoryBytes: number; fileSizeBytes: number }): string {
  const tail = ffmpegErrorText(run.stderrTail);
  const mib = (bytes: number) => `${Math.round(bytes / 1024 ** 2)} MiB`;
  if (run.signal === 'SIGXFSZ')
    return `ffmpeg was stopped: an output file grew past the limit of ${mib(limits.fileSizeBytes)} per file: ${tail}`;
  if (run.signal === 'SIGXCPU') return `ffmpeg was stopped: it used more CPU time than allowed: ${tail}`;
  if (/Cannot allocate memory|out of memory|std::bad_alloc/i.test(run.stderrTail)) {
    return `ffmpeg ran out of memory (each run may use at most ${mib(limits.memoryBytes)}): ${tail}`;
  }
  const how = run.signal ? `was killed by ${run.signal}` : `exited with code ${run.exitCode}`;
  return `ffmpeg ${how}: ${tail}`;
}
