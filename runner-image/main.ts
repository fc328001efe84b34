// Runner entry point. Embedded mode: StepSpecs arrive on stdin, one JSON line per job, worked on one
// after the other until stdin ends; RunnerEvents go out as JSON lines on stdout. Cluster mode (a Job's
// pod): the one spec is in FFOP_STEP_SPEC and events are also POSTed to FFOP_REPORT_URL with the
// Job's token. ffmpeg is stopped when the runner is told to stop
// (SIGTERM) or when the process that started it goes away.
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { RUNNER_ENV } from '../core/k8s/names.ts';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { jobName } from '../core/jobs/job-name.ts';
import { ErrorStatus } from '../core/commands/error-status.ts';
import { confinementFromEnv } from './confinement-from-env.ts';
import { httpReporter, type Reporter } from './reporter.ts';
import { runStep } from './run-step.ts';
import { HANDOFF_DIR_ENV } from '../core/storage/handoff.ts';

const abort = new AbortController();
process.on('SIGTERM', () => abort.abort());
process.on('SIGINT', () => abort.abort());
const parent = process.ppid;
// Reparented means the service died; nobody will read the result, so stop the work.
const watch = setInterval(() => {
  if (process.ppid !== parent) abort.abort();
}, 1000);
watch.unref();
process.stdout.on('error', () => abort.abort());

const workRoot = process.env.FFOP_WORK_ROOT ?? tmpdir();
// Set up before the spec arrives: a runner started ahead (embedded mode) has it ready when its job comes.
const confining = confinementFromEnv(process.env, workRoot, (line) => process.stderr.write(line + '\n'));
confining.catch(() => {}); // awaited below; its failure becomes the step's result

const positive = (name: string): number | undefined => {
  const value = Number(process.env[name]);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
};

/** Runs one step, reporting through `emit`; a failure to confine becomes the step's result. */
async function runOne(spec: StepSpec, emit: (event: RunnerEvent) => void): Promise<void> {
  try {
    const { confinement, uid } = await confining;
    await runStep(spec, {
      workRoot,
      emit,
      signal: abort.signal,
      confinement,
      uid,
      ffmpegPath: process.env.FFMPEG_PATH,
      ffprobePath: process.env.FFPROBE_PATH,
      maxOutputFileBytes: positive('FFOP_MAX_OUTPUT_FILE_BYTES'),
      maxMemoryBytes: positive('FFOP_MAX_MEMORY_BYTES'),
      maxOutputFiles: positive('FFOP_MAX_OUTPUT_FILES'),
      podMemoryLimit: process.env.FFOP_POD_MEMORY_LIMIT || undefined,
      handoffDir: process.env[HANDOFF_DIR_ENV] || undefined,
    });
  } catch (err) {
    // No confinement, no ffmpeg: the step fails and says why.
    emit({
      type: 'result',
      ok: false,
      errorStatus: ErrorStatus.INTERNAL_ERROR,
      errorMessage: (err as Error).message,
      ffmpegSeconds: null,
      inputBytes: 0,
    });
  }
}

const toStdout = (event: RunnerEvent) => void process.stdout.write(JSON.stringify(event) + '\n');
const fromEnv = process.env[RUNNER_ENV.spec];
if (fromEnv === undefined) {
  // Told to stop: the backend keeps stdin open, so end the wait for the next spec (closing the reader
  // ends the loop, idle or after the step in progress), or the runner would linger, holding its uid.
  const specs = createInterface({ input: process.stdin });
  abort.signal.addEventListener(
    'abort',
    () => {
      specs.close();
      process.stdin.destroy();
    },
    { once: true },
  );
  for await (const line of specs) {
    if (line.trim() === '') continue;
    await runOne(JSON.parse(line) as StepSpec, toStdout);
    if (abort.signal.aborted) break;
  }
  if (abort.signal.aborted) process.exitCode = 143; // stopped from outside: no result of ours
} else {
  const spec = JSON.parse(fromEnv) as StepSpec;
  const attempt = Number(process.env.FFOP_ATTEMPT ?? '1');
  const reportUrl = process.env[RUNNER_ENV.reportUrl];
  const reporter: Reporter | null = reportUrl
    ? httpReporter(
        reportUrl,
        process.env.FFOP_JOB_NAME ?? jobName(spec.commandId, spec.step, attempt),
        process.env[RUNNER_ENV.reportToken] ?? '',
      )
    : null;
  await runOne(spec, (event) => {
    toStdout(event);
    reporter?.send(event);
  });
  if (abort.signal.aborted)
    process.exitCode = 143; // stopped from outside: no result of ours
  else if (reporter && !(await reporter.flush())) {
    process.stderr.write('could not deliver the result to the API\n');
    process.exitCode = 1;
  }
}
