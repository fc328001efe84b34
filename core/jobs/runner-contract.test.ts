import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { POD_FALLBACK, readRunnerEnv, RUNNER_ENV, RUNNER_MAIN, runnerEnv, runnerNodeArgs, type RunnerSettings } from './runner-contract.ts';
import type { StepSpec } from './step-spec.ts';

const spec = { commandId: 'c1', step: 0, argv: ['-i', 'in.mp4', 'out.mp4'] } as unknown as StepSpec;

const everySetting: Required<RunnerSettings> = {
  spec,
  reportUrl: 'http://api:8080/internal/v1/job-events',
  reportToken: 'token',
  jobName: 'ffc-c1-0-2',
  attempt: 2,
  workRoot: '/work',
  maxOutputFileBytes: 2 * 1024 ** 3,
  maxOutputFiles: 50,
  maxMemoryBytes: 4 * 1024 ** 3,
  podMemoryLimit: '4608Mi',
  handoffDir: '/data/storage/tmp/handoff',
  confinement: POD_FALLBACK,
  unsafeNoConfinement: false,
  confinementChecked: true,
  seccompProgram: '/app/seccomp.bpf',
  sandboxProc: false,
  sandboxUid: 2000123,
  bwrapPath: '/usr/bin/bwrap',
  ffmpegPath: '/usr/bin/ffmpeg',
  ffprobePath: '/usr/bin/ffprobe',
  startGate: '/app/dist/core/confine/start-gate.so',
};

test('every setting written by runnerEnv reads back the same, each under a name of its own', () => {
  const env = runnerEnv(everySetting);
  assert.equal(Object.keys(env).length, Object.keys(everySetting).length);
  assert.equal(new Set(Object.values(RUNNER_ENV)).size, Object.keys(RUNNER_ENV).length);
  assert.deepEqual(readRunnerEnv(env), everySetting);
});

test('settings left out are left out of the environment, and read back as their defaults', () => {
  assert.deepEqual(runnerEnv({ workRoot: '/w', sandboxUid: undefined }), { [RUNNER_ENV.workRoot]: '/w' });
  const read = readRunnerEnv({});
  assert.equal(read.spec, undefined, 'no spec: specs come on stdin');
  assert.equal(read.workRoot, tmpdir());
  assert.equal(read.attempt, 1);
  assert.equal(read.reportToken, '');
  assert.equal(read.reportUrl, undefined);
  assert.equal(read.confinement, undefined);
  assert.equal(read.unsafeNoConfinement, false);
  assert.equal(read.confinementChecked, false);
  assert.equal(read.sandboxProc, true, '/proc is mounted unless the starter found it cannot be');
  assert.equal(read.sandboxUid, undefined);
  assert.equal(read.maxMemoryBytes, undefined);
});

test('a malformed limit or confinement counts as absent; empty texts are absent', () => {
  const read = readRunnerEnv({
    [RUNNER_ENV.maxOutputFileBytes]: 'lots',
    [RUNNER_ENV.maxOutputFiles]: '0',
    [RUNNER_ENV.maxMemoryBytes]: '1.5',
    [RUNNER_ENV.confinement]: 'none',
    [RUNNER_ENV.podMemoryLimit]: '',
    [RUNNER_ENV.handoffDir]: '',
    [RUNNER_ENV.sandboxUid]: '',
    [RUNNER_ENV.reportUrl]: '',
  });
  assert.deepEqual(
    [read.maxOutputFileBytes, read.maxOutputFiles, read.maxMemoryBytes, read.confinement, read.podMemoryLimit, read.handoffDir],
    [undefined, undefined, undefined, undefined, undefined, undefined],
  );
  assert.equal(read.sandboxUid, undefined);
  assert.equal(read.reportUrl, undefined);
  // A bad uid is not dropped: the runner refuses it when it confines the step (confinement-from-env.ts).
  assert.ok(Number.isNaN(readRunnerEnv({ [RUNNER_ENV.sandboxUid]: 'root' }).sandboxUid));
});

test('the runner entry point exists and node starts it from the sources through tsx', () => {
  assert.ok(existsSync(RUNNER_MAIN), RUNNER_MAIN);
  assert.match(RUNNER_MAIN, /runner-image\/main\.ts$/);
  const args = runnerNodeArgs();
  assert.equal(args.at(-1), RUNNER_MAIN);
  assert.equal(args[0], '--import');
});

test('the names are the ones the images and older runners use, in the order of a Job env', () => {
  // The Dockerfile and scripts/build-images.sh set some of these by name, and a Job applied again must
  // keep its pod template: a rename or a reorder here is a change of the contract, not a refactor.
  assert.deepEqual(Object.values(RUNNER_ENV), [
    'FFOP_STEP_SPEC',
    'FFOP_REPORT_URL',
    'FFOP_REPORT_TOKEN',
    'FFOP_JOB_NAME',
    'FFOP_WORK_ROOT',
    'FFOP_MAX_OUTPUT_FILE_BYTES',
    'FFOP_MAX_OUTPUT_FILES',
    'FFOP_MAX_MEMORY_BYTES',
    'FFOP_POD_MEMORY_LIMIT',
    'FFOP_RUNNER_CONFINEMENT',
    'FFOP_ATTEMPT',
    'FFOP_STORAGE_HANDOFF_DIR',
    'FFOP_UNSAFE_NO_CONFINEMENT',
    'FFOP_CONFINEMENT_CHECKED',
    'FFOP_SECCOMP_PROGRAM',
    'FFOP_SANDBOX_PROC',
    'FFOP_SANDBOX_UID',
    'FFOP_BWRAP_PATH',
    'FFMPEG_PATH',
    'FFPROBE_PATH',
    'FFOP_START_GATE_LIBRARY',
  ]);
});
