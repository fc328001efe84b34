// Runner entry point: reads a StepSpec (JSON) from stdin, runs it, prints RunnerEvents as JSON lines.
// It stops ffmpeg and exits when told to (SIGTERM) or when the process that started it goes away.
import { text } from 'node:stream/consumers';
import { tmpdir } from 'node:os';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { detectSandbox } from '../core/media/sandbox.ts';
import { runStep } from './run-step.ts';

const abort = new AbortController();
process.on('SIGTERM', () => abort.abort());
process.on('SIGINT', () => abort.abort());
const parent = process.ppid;
// Reparented means the service died; nobody will read the result, so stop the work.
const watch = setInterval(() => {
  if (process.ppid !== parent) abort.abort();
}, 1000);
watch.unref();

const emit = (event: RunnerEvent) => {
  process.stdout.write(JSON.stringify(event) + '\n');
};
process.stdout.on('error', () => abort.abort());

const spec = JSON.parse(await text(process.stdin)) as StepSpec;
await runStep(spec, {
  workRoot: process.env.FFOP_WORK_ROOT ?? tmpdir(),
  emit,
  signal: abort.signal,
  sandbox: process.env.FFOP_SANDBOX === 'none' ? 'none' : await detectSandbox(),
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
  maxOutputFileBytes: process.env.FFOP_MAX_OUTPUT_FILE_BYTES ? Number(process.env.FFOP_MAX_OUTPUT_FILE_BYTES) : undefined,
});
