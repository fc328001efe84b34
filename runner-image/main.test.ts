// main.ts as its starters run it: a child process given StepSpecs as JSON lines on stdin (embedded
// mode, the runner kept warm between jobs) or one spec in its environment (a Job's pod), printing
// RunnerEvents as JSON lines on stdout.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { ErrorStatus } from '../core/commands/error-status.ts';
import { runnerSettingsFor } from '../core/confine/set-up.ts';
import { testConfinement } from '../core/confine/testing/test-confinement.ts';
import { jobName } from '../core/jobs/job-name.ts';
import { runnerEnv, runnerNodeArgs, type RunnerSettings } from '../core/jobs/runner-contract.ts';
import type { RunnerEvent, StepSpec } from '../core/jobs/step-spec.ts';
import { startFileServer, stepSpec, type FileServer } from './testing/runner-fixtures.ts';

/** A started runner: its events as they arrive on stdout, its stderr, and how it ended. */
interface RunnerProcess {
  child: ChildProcessWithoutNullStreams;
  events: RunnerEvent[];
  stderr(): string;
  /** Resolves when an event matching `wanted` has arrived. */
  waitFor(wanted: (event: RunnerEvent) => boolean): Promise<void>;
  exit: Promise<number | null>;
}

describe('the runner process (main.ts)', () => {
  let server: FileServer;
  let workRoot: string;
  /** What the local-process backend hands a runner: its work folder and the confinement it already checked. */
  let base: RunnerSettings;
  const running: RunnerProcess[] = [];

  before(async () => {
    server = await startFileServer();
    const { confinement, uids } = await testConfinement();
    base = runnerSettingsFor(confinement);
    // As root the service lends each runner a uid of its own; any unprivileged one of the test range does here.
    if (uids) base.sandboxUid = 3000999;
  });
  after(() => server.close());
  beforeEach(async () => {
    workRoot = await mkdtemp(join(tmpdir(), 'runner-main-'));
    server.posts.length = 0;
    server.statuses.clear();
  });
  afterEach(async () => {
    // A test that failed half way must not leave its runner behind.
    for (const runner of running.splice(0)) {
      if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGKILL');
      await runner.exit;
    }
    await rm(workRoot, { recursive: true, force: true });
  });

  function startRunner(settings: RunnerSettings = {}): RunnerProcess {
    const child = spawn(process.execPath, runnerNodeArgs(), {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...runnerEnv({ ...base, workRoot, ...settings }) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const events: RunnerEvent[] = [];
    const waiters: (() => void)[] = [];
    let partial = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) events.push(JSON.parse(line) as RunnerEvent);
      for (const wake of waiters.splice(0)) wake();
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exit = new Promise<number | null>((resolve) =>
      child.once('close', (code) => {
        for (const wake of waiters.splice(0)) wake();
        resolve(code);
      }),
    );
    const waitFor = async (wanted: (event: RunnerEvent) => boolean): Promise<void> => {
      while (!events.some(wanted)) {
        if (child.exitCode !== null) assert.fail(`the runner exited first: ${stderr}`);
        await new Promise<void>((wake) => waiters.push(wake));
      }
    };
    const runner = { child, events, stderr: () => stderr, waitFor, exit };
    running.push(runner);
    return runner;
  }

  /** A spec whose download the address policy refuses: a whole step in a few milliseconds. */
  const refusedSpec = (): StepSpec =>
    stepSpec('-i {{in_1}} {{out_1}}', {
      inputs: [{ alias: 'in_1', url: `${server.url}/clip.mp4`, source: 'external' }],
      outputs: [{ alias: 'out_1', fileName: 'a.mp4', kind: 'file', uploadUrl: `${server.url}/put/a` }],
    });

  const label = (e: RunnerEvent) => (e.type === 'stage' ? e.stage : e.type === 'result' ? `result ${e.ok ? 'ok' : e.errorStatus}` : e.type);

  test('works on the specs of its stdin one after the other, skipping blank lines, and exits when stdin ends', async () => {
    const encode = stepSpec('-f lavfi -i testsrc=size=64x48:rate=10:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}', {
      outputs: [{ alias: 'out_1', fileName: 'b.mp4', kind: 'file', uploadUrl: `${server.url}/put/b` }],
    });
    const runner = startRunner();
    runner.child.stdin.end(`${JSON.stringify(refusedSpec())}\n\n${JSON.stringify(encode)}\n`);
    assert.equal(await runner.exit, 0, runner.stderr());
    const labels = runner.events.filter((e) => e.type !== 'progress' && e.type !== 'log').map(label);
    assert.deepEqual(labels, [
      'DOWNLOADING',
      `result ${ErrorStatus.FORBIDDEN_INPUT_ADDRESS}`,
      'DOWNLOADING',
      'PREPARING_INPUT_FILES',
      'FFMPEG_PROCESSING',
      'UPLOADING',
      'result ok',
    ]);
    assert.ok(server.uploads.has('/put/b'));
    assert.deepEqual(await readdir(workRoot), [], 'no working folder left behind');
  });

  test('in a pod it runs the spec in its environment and POSTs every event to the API with its Job name and token', async () => {
    const spec = refusedSpec();
    const runner = startRunner({
      spec,
      reportUrl: `${server.url}/events`,
      reportToken: 'job-token',
      attempt: 2,
    });
    runner.child.stdin.end();
    assert.equal(await runner.exit, 0, runner.stderr());
    assert.equal(runner.events.length, 2);
    assert.deepEqual(
      server.posts.map((p) => [p.path, p.authorization]),
      [
        ['/events', 'Bearer job-token'],
        ['/events', 'Bearer job-token'],
      ],
    );
    assert.deepEqual(
      server.posts.map((p) => JSON.parse(p.body.toString())),
      runner.events.map((event) => ({ jobName: jobName(spec.commandId, 0, 2), event })),
    );
  });

  test('in a pod, a result the API refuses makes the runner exit 1 and say so', async () => {
    server.statuses.set('/events', 401);
    const runner = startRunner({
      spec: refusedSpec(),
      reportUrl: `${server.url}/events`,
      reportToken: 'expired',
    });
    runner.child.stdin.end();
    assert.equal(await runner.exit, 1);
    assert.match(runner.stderr(), /could not deliver the result to the API/);
  });

  /** A step whose download never ends: the runner is busy with it until it is stopped. */
  const endlessSpec = (): StepSpec => {
    server.stalled.add('/endless.mp4');
    return stepSpec('-i {{in_1}} {{out_1}}', {
      inputs: [{ alias: 'in_1', url: `${server.url}/endless.mp4`, source: 'external' }],
      outputs: [{ alias: 'out_1', fileName: 'a.mp4', kind: 'file', uploadUrl: `${server.url}/put/a` }],
      allow: [server.allowEntry],
    });
  };

  test('in a pod, SIGTERM mid-step (the Job deleted) stops it without a result of its own and exits 143', async () => {
    const runner = startRunner({ spec: endlessSpec(), reportUrl: `${server.url}/events` });
    runner.child.stdin.end();
    await runner.waitFor((e) => e.type === 'stage');
    runner.child.kill('SIGTERM');
    assert.equal(await runner.exit, 143, runner.stderr());
    assert.deepEqual(runner.events.map(label), ['DOWNLOADING']);
    assert.deepEqual(
      server.posts.map((p) => JSON.parse(p.body.toString()).event.type),
      ['stage'],
    );
    assert.deepEqual(await readdir(workRoot), []);
  });

  test('a warm runner (stdin still open) stopped mid-step by SIGTERM exits 143 too', { timeout: 2_000 }, async () => {
    const runner = startRunner();
    runner.child.stdin.write(`${JSON.stringify(endlessSpec())}\n`); // stdin stays open, as the local-process backend keeps it
    await runner.waitFor((e) => e.type === 'stage');
    runner.child.kill('SIGTERM');
    assert.equal(await runner.exit, 143, runner.stderr());
    assert.deepEqual(runner.events.map(label), ['DOWNLOADING']);
  });

  test('an idle warm runner (between jobs, stdin open) exits 143 on SIGTERM', { timeout: 5_000 }, async () => {
    const runner = startRunner();
    runner.child.stdin.write(`${JSON.stringify(refusedSpec())}\n`);
    await runner.waitFor((e) => e.type === 'result');
    await new Promise((r) => setTimeout(r, 500)); // past the step's clean-up: waiting for the next spec
    runner.child.kill('SIGTERM');
    assert.equal(await runner.exit, 143, runner.stderr());
  });

  test('a runner that cannot confine ffmpeg fails each step INTERNAL_ERROR, saying why', async () => {
    const runner = startRunner({ confinementChecked: false, bwrapPath: '/nonexistent/bwrap' });
    runner.child.stdin.end(`${JSON.stringify(refusedSpec())}\n`);
    assert.equal(await runner.exit, 0, runner.stderr());
    const [result] = runner.events;
    assert.ok(result.type === 'result' && !result.ok, JSON.stringify(result));
    assert.equal(result.errorStatus, ErrorStatus.INTERNAL_ERROR);
    assert.match(result.errorMessage, /ffmpeg cannot be confined on this host/);
    assert.equal(runner.events.length, 1, 'no stage was entered');
  });
});
