// Runner entry point. Embedded mode: StepSpecs arrive on stdin, one JSON line per job, worked on one
// after the other until stdin ends; RunnerEvents go out as JSON lines on stdout. Cluster mode (a Job's
// pod): the one spec is in the environment and events are also POSTed to the API with the Job's
// token. What the environment holds is core/jobs/runner-contract.ts. ffmpeg is stopped when the runner is told to stop
// (SIGTERM) or when the process that started it goes away.
import { createInterface } from 'node:readline';
import { readRunnerEnv } from '../core/jobs/runner-contract.ts';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { jobName } from '../core/jobs/job-name.ts';
import { ErrorStatus } from '../core/commands/error-status.ts';
import { confinementFromEnv } from './confinement-from-env.ts';
import { httpReporter, type Reporter } from './reporter.ts';
import { runStep } from './run-step.ts';
import { httpUploadPlans, uploadPlansUrl } from './upload-plans.ts';
import type { PlanUpload } from './outputs.ts';

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

const settings = readRunnerEnv(process.env);
const { workRoot } = settings;
// Set up before the spec arrives: a runner started ahead (embedded mode) has it ready when its job comes.
const confining = confinementFromEnv(settings, workRoot, (line) => process.stderr.write(line + '\n'));
confining.catch(() => {}); // awaited below; its failure becomes the step's result

/** Runs one step, reporting through `emit`; a failure to confine becomes the step's result. */
async function runOne(spec: StepSpec, emit: (event: RunnerEvent) => void, planUpload?: PlanUpload): Promise<void> {
  try {
    const { confinement, uid } = await confining;
    await runStep(spec, {
      workRoot,
      emit,
      signal: abort.signal,
      confinement,
      uid,
      ffmpegPath: settings.ffmpegPath,
      ffprobePath: settings.ffprobePath,
      maxOutputFileBytes: settings.maxOutputFileBytes,
      maxMemoryBytes: settings.maxMemoryBytes,
      maxOutputFiles: settings.maxOutputFiles,
      podMemoryLimit: settings.podMemoryLimit,
      handoffDir: settings.handoffDir,
      planUpload,
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
const spec = settings.spec;
if (spec === undefined) {
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
    const next = JSON.parse(line) as StepSpec;
    const plans = next.uploadPlans;
    await runOne(next, toStdout, plans ? httpUploadPlans(plans.url, plans.jobName, plans.token) : undefined);
    if (abort.signal.aborted) break;
  }
  if (abort.signal.aborted) process.exitCode = 143; // stopped from outside: no result of ours
} else {
  const name = settings.jobName ?? jobName(spec.commandId, spec.step, settings.attempt);
  const reporter: Reporter | null = settings.reportUrl ? httpReporter(settings.reportUrl, name, settings.reportToken) : null;
  const planUpload = settings.reportUrl ? httpUploadPlans(uploadPlansUrl(settings.reportUrl), name, settings.reportToken) : undefined;
  await runOne(
    spec,
    (event) => {
      toStdout(event);
      reporter?.send(event);
    },
    planUpload,
  );
  if (abort.signal.aborted)
    process.exitCode = 143; // stopped from outside: no result of ours
  else if (reporter && !(await reporter.flush())) {
    process.stderr.write('could not deliver the result to the API\n');
    process.exitCode = 1;
  }
}
