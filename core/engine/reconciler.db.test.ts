// The reconciler on its own: a real database (PGlite, or PostgreSQL), a fixed clock, and a job backend
// double in place of runners, so each rule is seen directly rather than through ffmpeg end to end.
import { newCaller } from '../accounts/testing/new-caller.ts';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { chainRow } from '../../api/commands/submission.ts';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo, type Caller } from '../accounts/accounts-repo.ts';
import { PlansRepo } from '../accounts/plans-repo.ts';
import { COMMAND_CANCEL_CHANNEL, CommandsRepo, type CommandRow } from '../commands/commands-repo.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { ProcessingStage, type RunnerEvent } from '../jobs/step-spec.ts';
import { createLogger } from '../logger.ts';
import { unknownMedia } from '../media/unknown-media.ts';
import { LocalStorage } from '../storage/local-storage.ts';
import type { BackendEvent, JobBackend, JobListener, JobRef, JobRequest, ReleaseGate } from './job-backend.ts';
import { Reconciler, type ReconcilerOptions } from './reconciler.ts';

/** A release gate double: the test sets how many steps may go and which steps fit no node. */
class ScriptedReleaseGate implements ReleaseGate {
  releasableNow = Infinity;
  maxVcpus: number | null = null;
  private readonly listeners: (() => void)[] = [];
  releasable(): number {
    return this.releasableNow;
  }
  onMayOpen(listener: () => void): void {
    this.listeners.push(listener);
  }
  /** As the cluster: room freed. */
  open(releasable: number): void {
    this.releasableNow = releasable;
    for (const l of this.listeners) l();
  }
}

/** A job backend double: records what the reconciler asks of it, and lets a test play the runners. */
class RecordingJobBackend implements JobBackend {
  readonly capacityVcpus: number | null;
  releaseGate?: ScriptedReleaseGate;
  queuesInCluster = false;
  /** Steps of more than 4 vCPUs fit no node of this cluster, for this reason. */
  unfitReason: string | null = null;
  unfit(request: Pick<JobRequest, 'vcpus'>): string | null {
    return request.vcpus > 4 ? this.unfitReason : null;
  }
  maxStepVcpus(): number | null {
    return this.unfitReason ? 4 : null;
  }
  readonly started: JobRequest[] = [];
  readonly deleted: string[] = [];
  readonly jobs = new Set<string>();
  /** The next ensureJob throws this (a backend that cannot start a step). */
  failNextStart: Error | null = null;
  /** Times the jobs were listed: once per pass, after the pass has acted on cancels. */
  listings = 0;
  private readonly listeners: JobListener[] = [];

  constructor(capacityVcpus: number | null) {
    this.capacityVcpus = capacityVcpus;
  }

  async ensureJob(request: JobRequest): Promise<void> {
    const failure = this.failNextStart;
    this.failNextStart = null;
    if (failure) throw failure;
    if (this.jobs.has(request.ref.name)) return;
    this.jobs.add(request.ref.name);
    this.started.push(request);
    // As the cluster: the released step's pod now waits for a node.
    if (this.releaseGate) this.releaseGate.releasableNow--;
  }

  /** Waits until the reconciler has started a job for this command's step and attempt. */
  async startedJob(commandId: string, step: number, attempt?: number): Promise<JobRequest> {
    for (const deadline = Date.now() + 5000; ; await new Promise((r) => setTimeout(r, 5))) {
      const found = this.started.find(
        (r) => r.ref.commandId === commandId && r.ref.step === step && (attempt === undefined || r.ref.attempt === attempt),
      );
      if (found) return found;
      if (Date.now() > deadline) assert.fail(`no job was started for ${commandId} step ${step}`);
    }
  }

  async listJobNames(): Promise<Set<string>> {
    this.listings++;
    return new Set(this.jobs);
  }

  async deleteJob(name: string): Promise<void> {
    this.deleted.push(name);
    this.jobs.delete(name);
  }

  subscribe(listener: JobListener): void {
    this.listeners.push(listener);
  }

  /** As a runner (or the backend itself): reports `event` for the job. */
  report(ref: JobRef, event: RunnerEvent | BackendEvent): void {
    for (const listener of this.listeners) listener(ref, event);
  }

  /** As a runner: the step worked, with every declared output of its spec. */
  succeed(request: JobRequest): void {
    const outputs = request.spec.outputs.map((o) => ({
      alias: o.alias,
      fileName: o.fileName,
      size: 1000,
      // Playlists and folders say how many files and how large their zip was.
      ...(o.kind === 'file' ? {} : { fileCount: 2, compressedSize: 900 }),
      media: unknownMedia(o.fileName),
    }));
    // 10 bytes per download: a step with none (lavfi) downloaded nothing.
    const inputBytes = 10 * (request.spec.inputs.length + (request.spec.archive ? 1 : 0));
    this.report(request.ref, { type: 'result', ok: true, ffmpegSeconds: 1.5, inputBytes, outputs });
  }

  /** As a runner: ffmpeg ended, and the step probes and stores its outputs. */
  uploading(request: JobRequest): void {
    this.report(request.ref, { type: 'stage', stage: ProcessingStage.UPLOADING });
  }

  /** The job the reconciler started last for this command. */
  lastFor(commandId: string): JobRequest {
    const found = this.started.filter((r) => r.ref.commandId === commandId).at(-1);
    if (!found) throw new Error(`no job was started for ${commandId}`);
    return found;
  }

  async close(): Promise<void> {}
}

/** A stored two-step chain (out_1 -> out_2), not started yet. */
async function insertTwoStepChain(f: ReconcilerFixture) {
  const row = chainRow(f.a, {
    ffmpeg_commands: ['-f lavfi -i testsrc=d=1 {{out_1}}', '-i {{out_1}} -vf scale=32:-2 {{out_2}}'],
    output_files: { out_1: 'a.mp4', out_2: 'b.mp4' },
    max_command_run_seconds: 60,
    vcpu_count: 1,
    is_private: false,
  });
  await f.commands.insert(row);
  return row;
}

/** A reconciler over its own database: plan 'four' (4 vCPUs) with accounts A and B, a backend double. */
async function reconcilerFixture(
  o: {
    capacity?: number | null;
    maxAttempts?: number;
    resyncMs?: number;
    ensureResource?: ReconcilerOptions['ensureResource'];
    /** Cluster mode's release gate (capacity null). */
    gate?: boolean;
    /** Cluster mode with Kueue: Jobs wait suspended in the cluster's queue. */
    kueue?: boolean;
  } = {},
) {
  const database = await openTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'ffop-reconciler-'));
  const plans = new PlansRepo(database.db);
  await plans.create({
    name: 'four',
    maxVcpus: 4,
    maxCommandRunSeconds: 600,
    requestsPerMinute: 100,
    storageQuotaBytes: 1e12,
    processingQuotaBytesPerMonth: 1e12,
    privateFiles: true,
  });
  const accounts = new AccountsRepo(database.db);
  const caller = (name: string) => newCaller(accounts, name, 'four');
  const commands = new CommandsRepo(database.db);
  const backend = new RecordingJobBackend(o.capacity === undefined ? 2 : o.capacity);
  if (o.gate) backend.releaseGate = new ScriptedReleaseGate();
  backend.queuesInCluster = o.kueue ?? false;
  /** Kubernetes Events the reconciler asked for. */
  const events: { id: string; reason: string; message: string }[] = [];
  const now = new Date('2026-11-23T12:00:00Z');
  /** Commands whose state the reconciler said changed (cluster mode mirrors each into its resource). */
  const mirrored: string[] = [];
  /** The reconciler's calls of CommandsRepo, by method: each is one statement. */
  const statements = new Map<string, number>();
  const countedCommands = new Proxy(commands, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        statements.set(String(key), (statements.get(String(key)) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const reconciler = new Reconciler({
    commands: countedCommands,
    backend,
    storage: new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: 'http://127.0.0.1:9', signingKey: 'k'.repeat(32) }),
    logger: createLogger('silent'),
    limits: { downloadMaxBytes: 1e9, downloadTimeoutSeconds: 60, uploadAllowanceSeconds: 60, allow: [], maxThreads: 2 },
    clock: () => now,
    maxAttempts: o.maxAttempts,
    workDir: dir,
    resyncMs: o.resyncMs ?? 3_600_000, // by default passes run only when the test asks or the reconciler kicks itself
    onCommandChanged: (id) => mirrored.push(id),
    onCommandEvent: (id, e) => events.push({ id, reason: e.reason, message: e.message }),
    ensureResource: o.ensureResource,
  });
  const submit = async (who: Caller, vcpus: number): Promise<string> => {
    const row = testCommandRow(who, { vcpu_count: vcpus });
    await commands.insert(row);
    return row.id;
  };
  /** Waits until the command's row satisfies `check` (events are applied asynchronously). */
  const eventually = async (id: string, check: (row: CommandRow) => boolean): Promise<CommandRow> => {
    for (const deadline = Date.now() + 5000; ; await new Promise((r) => setTimeout(r, 5))) {
      const row = (await commands.findById(id))!;
      if (check(row)) return row;
      if (Date.now() > deadline) assert.fail(`command ${id} is still ${row.status} ${row.errorStatus ?? ''}`);
    }
  };
  return {
    database,
    commands,
    plans,
    backend,
    reconciler,
    submit,
    eventually,
    now,
    mirrored,
    events,
    statements,
    gate: backend.releaseGate,
    a: await caller('A'),
    b: await caller('B'),
    close: async () => {
      await reconciler.stop();
      await database.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const startedIds = (backend: RecordingJobBackend) => backend.started.map((r) => r.ref.commandId);

test('admission: oldest first across accounts while capacity lasts, each account within its plan', async () => {
  const f = await reconcilerFixture({ capacity: 8 });
  try {
    const a1 = await f.submit(f.a, 3);
    const b1 = await f.submit(f.b, 2);
    const a2 = await f.submit(f.a, 2); // A: 3 + 2 > 4, waits
    const b2 = await f.submit(f.b, 2);
    const b3 = await f.submit(f.b, 1); // B: 2 + 2 + 1 > 4, waits
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [a1, b1, b2]);
    assert.equal((await f.commands.findById(a1))!.status, 'PROCESSING');
    assert.equal((await f.commands.findById(a2))!.status, 'QUEUED');

    f.backend.succeed(f.backend.lastFor(a1)); // A's vCPUs free: a2 may start, b3 still may not
    await f.eventually(a2, (row) => row.status === 'PROCESSING');
    assert.deepEqual(startedIds(f.backend), [a1, b1, b2, a2]);
    assert.equal((await f.commands.findById(b3))!.status, 'QUEUED');
  } finally {
    await f.close();
  }
});

test('the shared capacity is first come, first served: a large command is not overtaken by small ones', async () => {
  const f = await reconcilerFixture({ capacity: 2 });
  try {
    const small = await f.submit(f.a, 1);
    const large = await f.submit(f.b, 2); // needs the whole machine
    const later = await f.submit(f.a, 1); // would fit next to `small`, but `large` came first
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [small]);
    f.reconciler.submitted(); // capacity is not full: a pass runs, and still starts nothing new
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [small]);
    f.backend.succeed(f.backend.lastFor(small));
    await f.eventually(large, (row) => row.status === 'PROCESSING');
    assert.equal((await f.commands.findById(later))!.status, 'QUEUED');
  } finally {
    await f.close();
  }
});

test('a command storing its outputs frees its share of the capacity; at most one such command per vCPU', async () => {
  const f = await reconcilerFixture({ capacity: 2 });
  try {
    const first = await f.submit(f.a, 2);
    const second = await f.submit(f.b, 2);
    const third = await f.submit(f.a, 2);
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [first]);
    f.backend.uploading(f.backend.lastFor(first));
    await f.eventually(second, (row) => row.status === 'PROCESSING');
    // Two commands finishing on a capacity of 2: the third waits although no ffmpeg runs.
    f.backend.uploading(f.backend.lastFor(second));
    await f.eventually(second, (row) => row.processingStage === ProcessingStage.UPLOADING);
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [first, second]);
    f.backend.succeed(f.backend.lastFor(first));
    await f.eventually(third, (row) => row.status === 'PROCESSING');
  } finally {
    await f.close();
  }
});

test("a chain keeps its share between its steps: only the last step's upload frees it", async () => {
  const f = await reconcilerFixture({ capacity: 2 });
  try {
    const chain = await insertTwoStepChain(f); // 1 vCPU
    const waiting = await f.submit(f.b, 2);
    await f.reconciler.reconcileOnce();
    f.backend.uploading(f.backend.lastFor(chain.id));
    await f.eventually(chain.id, (row) => row.processingStage === ProcessingStage.UPLOADING);
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [chain.id], 'its next step will need the share again');
    f.backend.succeed(f.backend.lastFor(chain.id));
    f.backend.uploading(await f.backend.startedJob(chain.id, 1));
    await f.eventually(waiting, (row) => row.status === 'PROCESSING');
  } finally {
    await f.close();
  }
});

test('one command at a time costs five statements: its pass reads once, then its start, its stage, its result; freed capacity with nothing queued makes no pass', async () => {
  const f = await reconcilerFixture({ capacity: 2 });
  try {
    for (let i = 0; i < 3; i++) {
      const id = await f.submit(f.a, 1);
      f.reconciler.submitted();
      const job = await f.backend.startedJob(id, 0);
      f.backend.uploading(job); // frees its share: nothing waits for it
      await f.eventually(id, (r) => r.processingStage === ProcessingStage.UPLOADING);
      f.backend.succeed(job);
      await f.eventually(id, (r) => r.status === 'SUCCESS');
    }
    await f.reconciler.stop(); // waits for any pass asked for
    assert.deepEqual(Object.fromEntries(f.statements), {
      // the first pass also looks for cancels and for commands over a lowered plan
      cancelRequested: 1,
      overPlan: 1,
      runningAndAdmissible: 3,
      startQueued: 3,
      recordStepState: 3,
      findById: 3, // the result's command
      completeStep: 3,
    });
  } finally {
    await f.close();
  }
});

test('freed capacity makes a pass while something is queued; with nothing queued none, and the next submit starts at once', async () => {
  const f = await reconcilerFixture({ capacity: 1 });
  try {
    const first = await f.submit(f.a, 1);
    f.reconciler.submitted();
    const job = await f.backend.startedJob(first, 0);
    const waiting = await f.submit(f.b, 1);
    f.reconciler.submitted(); // its pass finds the capacity taken
    f.backend.succeed(job);
    await f.eventually(waiting, (r) => r.status === 'PROCESSING');
    await f.reconciler.reconcileOnce(); // finds the capacity taken and nothing queued
    f.backend.succeed(f.backend.lastFor(waiting)); // frees the capacity: no pass
    await f.eventually(waiting, (r) => r.status === 'SUCCESS');
    const third = await f.submit(f.a, 1);
    f.reconciler.submitted();
    await f.eventually(third, (r) => r.status === 'PROCESSING');
    await f.reconciler.stop();
    assert.equal(f.statements.get('runningAndAdmissible'), 5, "three submits' passes, the end of the first, the test's");
  } finally {
    await f.close();
  }
});

test('a success records the outputs and the figures, and deletes the job', async () => {
  const f = await reconcilerFixture();
  try {
    const submitted = testCommandRow(f.a, { input_files: { in_1: 'https://example.com/in.mp4' }, ffmpeg_command: '-i {{in_1}} {{out_1}}' });
    await f.commands.insert(submitted);
    const id = submitted.id;
    await f.reconciler.reconcileOnce();
    const job = f.backend.lastFor(id);
    f.backend.succeed(job);
    const row = await f.eventually(id, (r) => r.status === 'SUCCESS');
    assert.equal(row.ffmpegSeconds, 1.5);
    assert.equal(row.processedBytes, 10 + 1000);
    assert.deepEqual(row.finishedAt, f.now);
    assert.deepEqual(
      (await f.commands.outputFiles(id)).map((x) => [x.alias, x.sizeBytes, x.status]),
      [['out_1', 1000, 'STORED']],
    );
    assert.ok(f.backend.deleted.includes(job.ref.name));
  } finally {
    await f.close();
  }
});

test('a chain moves to its next step with the earlier outputs stored', async () => {
  const f = await reconcilerFixture();
  try {
    const row = await insertTwoStepChain(f);
    const id = row.id;
    await f.reconciler.reconcileOnce();
    f.backend.succeed(f.backend.lastFor(id));
    await f.eventually(id, (r) => r.currentStep === 1);
    const second = await f.backend.startedJob(id, 1);
    assert.equal(second.ref.step, 1);
    assert.equal((await f.commands.findById(id))!.status, 'PROCESSING');
    assert.deepEqual(
      (await f.commands.outputFiles(id)).map((x) => x.alias),
      ['out_1'],
    );
    f.backend.succeed(second);
    await f.eventually(id, (r) => r.status === 'SUCCESS');
    // What `kubectl describe` shows in cluster mode.
    assert.deepEqual(
      f.events.map((e) => [e.reason, e.message.replace(/\d+\.\d s/, 'N s')]),
      [
        ['Started', 'started on 1 vCPU: step 1 of 2'],
        ['StepSucceeded', 'step 1 of 2 succeeded'],
        ['StepSucceeded', 'step 2 of 2 succeeded'],
        ['Succeeded', 'succeeded; ffmpeg ran N s'],
      ],
    );
  } finally {
    await f.close();
  }
});

test('a lost job runs again with the next attempt, and the command fails INTERRUPTED after the last', async () => {
  const f = await reconcilerFixture({ maxAttempts: 2 });
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const first = f.backend.lastFor(id);
    f.backend.jobs.delete(first.ref.name); // the process running it went away
    await f.reconciler.reconcileOnce();
    const second = f.backend.lastFor(id);
    assert.equal(second.ref.attempt, 2);
    assert.equal((await f.commands.findById(id))!.attempt, 2);

    f.backend.jobs.delete(second.ref.name);
    await f.reconciler.reconcileOnce();
    const row = (await f.commands.findById(id))!;
    assert.equal(row.status, 'FAILED');
    assert.equal(row.errorStatus, 'INTERRUPTED');
    assert.match(row.errorMessage!, /2 times/);
    assert.deepEqual(
      f.events.filter((e) => e.reason === 'Failed').map((e) => e.message),
      [`INTERRUPTED: ${row.errorMessage}`],
      'the end is an Event that names the error status and message',
    );
  } finally {
    await f.close();
  }
});

test('a result whose command cannot be read drops its job: the next pass runs the step again', async () => {
  const f = await reconcilerFixture();
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const first = f.backend.lastFor(id);
    const read = f.commands.findById.bind(f.commands);
    let failNextRead = true; // the database answers the result's read with an error, once
    f.commands.findById = async (commandId) => {
      if (!failNextRead) return read(commandId);
      failNextRead = false;
      throw new Error('connection lost');
    };
    f.backend.succeed(first);
    for (const deadline = Date.now() + 5000; !f.backend.deleted.includes(first.ref.name); await new Promise((r) => setTimeout(r, 5))) {
      assert.ok(Date.now() < deadline, 'the job was not deleted');
    }
    assert.equal((await f.commands.findById(id))!.status, 'PROCESSING');
    await f.reconciler.reconcileOnce();
    const second = f.backend.lastFor(id);
    assert.equal(second.ref.attempt, 2);
    f.backend.succeed(second);
    await f.eventually(id, (row) => row.status === 'SUCCESS');
  } finally {
    await f.close();
  }
});

test("an earlier attempt's result changes nothing, and its job is deleted", async () => {
  const f = await reconcilerFixture();
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const stale = f.backend.lastFor(id);
    f.backend.jobs.delete(stale.ref.name);
    await f.reconciler.reconcileOnce(); // attempt 2 starts
    f.backend.report(stale.ref, {
      type: 'result',
      ok: false,
      errorStatus: 'FFMPEG_FAILED' as never,
      errorMessage: 'late',
      ffmpegSeconds: null,
      inputBytes: 0,
    });
    for (const deadline = Date.now() + 5000; !f.backend.deleted.includes(stale.ref.name);) {
      if (Date.now() > deadline) assert.fail('the stale job was not deleted');
      await new Promise((r) => setTimeout(r, 5));
    }
    const row = (await f.commands.findById(id))!;
    assert.equal(row.status, 'PROCESSING');
    assert.equal(row.attempt, 2);
  } finally {
    await f.close();
  }
});

test('a plan lowered after submission fails the command PLAN_LIMIT_EXCEEDED and lets the account go on', async () => {
  const f = await reconcilerFixture({ capacity: 8 });
  try {
    const big = await f.submit(f.a, 3);
    const small = await f.submit(f.a, 1);
    await f.plans.update('four', { maxVcpus: 2 });
    await f.reconciler.reconcileOnce();
    const row = (await f.commands.findById(big))!;
    assert.equal(row.errorStatus, 'PLAN_LIMIT_EXCEEDED');
    assert.match(row.errorMessage!, /vcpu_count 3 is more than the 2 vCPUs/);
    await f.eventually(small, (r) => r.status === 'PROCESSING');
  } finally {
    await f.close();
  }
});

test('a step that cannot be started fails INTERNAL_ERROR naming the cause; the next command still starts', async () => {
  const f = await reconcilerFixture();
  try {
    const broken = await f.submit(f.a, 1);
    const next = await f.submit(f.b, 1);
    f.backend.failNextStart = new Error('quota of pods exceeded');
    await f.reconciler.reconcileOnce();
    const row = (await f.commands.findById(broken))!;
    assert.equal(row.errorStatus, 'INTERNAL_ERROR');
    assert.match(row.errorMessage!, /could not start step 1: quota of pods exceeded/);
    assert.equal((await f.commands.findById(next))!.status, 'PROCESSING');
  } finally {
    await f.close();
  }
});

test('a playlist whose files cannot be unpacked fails OUTPUT_UPLOAD_FAILED, naming the output', async () => {
  const f = await reconcilerFixture();
  try {
    const row = testCommandRow(f.a, {
      ffmpeg_command: '-f lavfi -i testsrc=d=1 -f hls {{out_playlist_hls}}',
      output_files: { out_playlist_hls: 'index.m3u8' },
    });
    await f.commands.insert(row);
    await f.reconciler.reconcileOnce();
    f.backend.succeed(f.backend.lastFor(row.id)); // a "success" that never uploaded the playlist's zip
    const failed = await f.eventually(row.id, (r) => r.status === 'FAILED');
    assert.equal(failed.errorStatus, 'OUTPUT_UPLOAD_FAILED');
    assert.match(failed.errorMessage!, /could not store the playlist out_playlist_hls/);
  } finally {
    await f.close();
  }
});

const progress = (outTimeSeconds: number, durationSeconds: number | null = 20): RunnerEvent => ({
  type: 'progress',
  outTimeSeconds,
  speed: 1.5,
  durationSeconds,
});

test('progress is stored for the running step, cleared when the next step starts and when the command ends', async () => {
  const f = await reconcilerFixture();
  try {
    const row = await insertTwoStepChain(f);
    await f.reconciler.reconcileOnce();
    assert.equal((await f.commands.findById(row.id))!.progress, null, 'nothing before ffmpeg reports');
    const first = f.backend.lastFor(row.id);
    f.backend.report(first.ref, progress(5));
    await f.eventually(row.id, (r) => r.progress?.outTimeSeconds === 5);
    assert.deepEqual((await f.commands.findById(row.id))!.progress, { outTimeSeconds: 5, speed: 1.5, durationSeconds: 20 });

    f.backend.succeed(first);
    const second = await f.eventually(row.id, (r) => r.currentStep === 1);
    assert.equal(second.progress, null, "the next step's ffmpeg has not reported yet");
    // A late event of the finished step changes nothing.
    f.backend.report(first.ref, progress(19));
    f.backend.report((await f.backend.startedJob(row.id, 1)).ref, progress(2, null));
    await f.eventually(row.id, (r) => r.progress?.outTimeSeconds === 2);
    assert.equal((await f.commands.findById(row.id))!.progress!.durationSeconds, null);

    f.backend.succeed(f.backend.lastFor(row.id));
    assert.equal((await f.eventually(row.id, (r) => r.status === 'SUCCESS')).progress, null);
  } finally {
    await f.close();
  }
});

test('progress of an earlier attempt, or after a failure, is not stored; a failure clears it', async () => {
  const f = await reconcilerFixture();
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const stale = f.backend.lastFor(id);
    f.backend.jobs.delete(stale.ref.name);
    await f.reconciler.reconcileOnce(); // attempt 2
    const current = f.backend.lastFor(id);
    f.backend.report(stale.ref, progress(9));
    f.backend.report(current.ref, progress(3));
    await f.eventually(id, (r) => r.progress !== null);
    assert.equal((await f.commands.findById(id))!.progress!.outTimeSeconds, 3);

    f.backend.report(current.ref, {
      type: 'result',
      ok: false,
      errorStatus: 'FFMPEG_FAILED' as never,
      errorMessage: 'x',
      ffmpegSeconds: 1,
      inputBytes: 0,
    });
    assert.equal((await f.eventually(id, (r) => r.status === 'FAILED')).progress, null);
    f.backend.report(current.ref, progress(4));
    await f.reconciler.stop(); // waits for progress writes
    assert.equal((await f.commands.findById(id))!.progress, null);
  } finally {
    await f.close();
  }
});

test('attack: progress a hostile command posts with its Job token is kept only as sane numbers', async () => {
  const f = await reconcilerFixture();
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const job = f.backend.lastFor(id);
    const hostile = (fields: Record<string, unknown>) => ({ type: 'progress', ...fields }) as unknown as RunnerEvent;
    f.backend.report(job.ref, hostile({ outTimeSeconds: 'x'.repeat(100_000), speed: 1, durationSeconds: 1 }));
    f.backend.report(job.ref, hostile({ outTimeSeconds: -5 }));
    f.backend.report(job.ref, hostile({ outTimeSeconds: 4, speed: { a: 1 }, durationSeconds: 'NaN', extra: 'x'.repeat(1000) }));
    await f.reconciler.stop();
    assert.deepEqual((await f.commands.findById(id))!.progress, { outTimeSeconds: 4, speed: null, durationSeconds: null });
  } finally {
    await f.close();
  }
});

test('attack: a result that cannot be true of its step fails the command INTERNAL_ERROR naming why; nothing of it counts', async () => {
  const f = await reconcilerFixture({ capacity: 8 });
  try {
    const media = unknownMedia('o.mp4');
    const attacks: [string, Record<string, unknown>, RegExp][] = [
      ['negative output size', { outputs: [{ alias: 'out_1', fileName: 'o.mp4', size: -1e12, media }] }, /outputs\.0\.size: /],
      ['negative input bytes', { inputBytes: -1e12 }, /inputBytes: /],
      ['huge output size', { outputs: [{ alias: 'out_1', fileName: 'o.mp4', size: 1e300, media }] }, /outputs\.0\.size: /],
      ['undeclared alias', { outputs: [{ alias: 'out_9', fileName: 'o.mp4', size: 10, media }] }, /"out_9" is not an output of this step/],
      [
        'media text too long',
        { outputs: [{ alias: 'out_1', fileName: 'o.mp4', size: 10, media: { ...media, codec: 'x'.repeat(10_000) } }] },
        /media\.codec/,
      ],
      ['ffmpeg seconds past the limit', { ffmpegSeconds: 1e6 }, /ffmpegSeconds: /],
    ];
    for (const [name, fields, why] of attacks) {
      const id = await f.submit(f.a, 1);
      await f.reconciler.reconcileOnce();
      const job = f.backend.lastFor(id);
      const outputs = [{ alias: 'out_1', fileName: 'o.mp4', size: 1000, media }];
      f.backend.report(job.ref, { type: 'result', ok: true, ffmpegSeconds: 1, inputBytes: 0, outputs, ...fields });
      const row = await f.eventually(id, (r) => r.status === 'FAILED');
      assert.equal(row.errorStatus, 'INTERNAL_ERROR', name);
      assert.match(row.errorMessage!, /^the runner's result was refused: /, name);
      assert.match(row.errorMessage!, why, name);
      assert.deepEqual([row.processedBytes, row.ffmpegSeconds], [0, 0], name);
      assert.deepEqual(await f.commands.outputFiles(id), [], name);
      assert.ok(f.backend.deleted.includes(job.ref.name), `${name}: its job is deleted`);
    }
  } finally {
    await f.close();
  }
});

test('attack: a stage that is none is not stored', async () => {
  const f = await reconcilerFixture();
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const job = f.backend.lastFor(id);
    f.backend.report(job.ref, { type: 'stage', stage: 'x'.repeat(10_000) } as never);
    await f.reconciler.stop(); // writes what it holds
    assert.equal((await f.commands.findById(id))!.processingStage, 'DOWNLOADING');
  } finally {
    await f.close();
  }
});

test('progress alone mirrors a command at most once per interval', async () => {
  const f = await reconcilerFixture(); // the fixture's clock stands still: one interval never ends
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const job = f.backend.lastFor(id);
    f.mirrored.length = 0;
    for (let t = 1; t <= 10; t++) f.backend.report(job.ref, progress(t));
    await f.eventually(id, (r) => r.progress?.outTimeSeconds === 10);
    assert.deepEqual(f.mirrored, [id]);
    // Any other change is mirrored as before.
    f.backend.report(job.ref, { type: 'stage', stage: 'UPLOADING' });
    await f.eventually(id, (r) => r.processingStage === 'UPLOADING');
    assert.deepEqual(f.mirrored, [id, id]);
  } finally {
    await f.close();
  }
});

test('cancel requests: a repeat is recorded too, an ended command refuses, another account sees nothing; each is notified', async () => {
  const f = await reconcilerFixture();
  try {
    const id = await f.submit(f.a, 1);
    const notified: string[] = [];
    const stop = await f.database.listen(
      COMMAND_CANCEL_CHANNEL,
      (payload) => notified.push(payload),
      () => {},
    );
    try {
      assert.deepEqual(await f.commands.requestCancel(id, f.b.account.id, f.now), null);
      assert.deepEqual(await f.commands.requestCancel(id, f.a.account.id, f.now), { requested: true });
      assert.deepEqual(await f.commands.requestCancel(id, f.a.account.id, new Date(f.now.getTime() + 5000)), { requested: true });
      assert.deepEqual((await f.commands.findById(id))!.cancelRequestedAt, f.now, 'the first request counts');
      assert.deepEqual(await f.commands.cancelRequested().then((rows) => rows.map((r) => r.id)), [id]);
      for (const deadline = Date.now() + 5000; notified.length < 2 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(notified, [id, id]);
    } finally {
      await stop();
    }
    await f.reconciler.reconcileOnce();
    assert.deepEqual(await f.commands.requestCancel(id, f.a.account.id, f.now), { requested: false, endedWith: 'FAILED' });
    assert.deepEqual(await f.commands.cancelRequested(), []);
  } finally {
    await f.close();
  }
});

test('cancel of a QUEUED command: it never starts; of a PROCESSING one: its job is deleted; both FAIL CANCELLED', async () => {
  const f = await reconcilerFixture({ capacity: 1 });
  try {
    const running = await f.submit(f.a, 1);
    const queued = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [running]);
    const job = f.backend.lastFor(running);
    f.backend.report(job.ref, progress(3));
    await f.eventually(running, (r) => r.progress !== null);

    await f.commands.requestCancel(queued, f.a.account.id, f.now);
    await f.reconciler.reconcileOnce();
    const q = (await f.commands.findById(queued))!;
    assert.deepEqual([q.status, q.errorStatus, q.errorMessage], ['FAILED', 'CANCELLED', 'cancelled through the API']);
    assert.equal((await f.commands.findById(running))!.status, 'PROCESSING');
    assert.deepEqual(f.backend.deleted, []);

    await f.commands.requestCancel(running, f.a.account.id, f.now);
    await f.reconciler.reconcileOnce();
    const r = (await f.commands.findById(running))!;
    assert.deepEqual([r.status, r.errorStatus, r.errorMessage, r.progress], ['FAILED', 'CANCELLED', 'cancelled through the API', null]);
    assert.deepEqual(f.backend.deleted, [job.ref.name]);
    assert.deepEqual(startedIds(f.backend), [running], 'the cancelled queued command never started');
  } finally {
    await f.close();
  }
});

test('cancels are looked for when one is asked and at every resync; a pass for another reason skips that read', async () => {
  const f = await reconcilerFixture({ capacity: 1 });
  try {
    const running = await f.submit(f.a, 1);
    const passDone = async (kick: () => void) => {
      const listings = f.backend.listings;
      kick();
      for (const deadline = Date.now() + 5000; f.backend.listings === listings; await new Promise((r) => setTimeout(r, 5))) {
        if (Date.now() > deadline) assert.fail('no pass ran');
      }
    };
    await passDone(() => f.reconciler.kick()); // the first pass always looks
    await f.eventually(running, (r) => r.status === 'PROCESSING');

    await f.commands.requestCancel(running, f.a.account.id, f.now); // stored, the reconciler not told
    await passDone(() => f.reconciler.kick());
    assert.equal((await f.commands.findById(running))!.status, 'PROCESSING');

    await passDone(() => f.reconciler.cancelRequested());
    const cancelled = (await f.commands.findById(running))!;
    assert.deepEqual([cancelled.status, cancelled.errorStatus], ['FAILED', 'CANCELLED']);
  } finally {
    await f.close();
  }

  const g = await reconcilerFixture({ capacity: 1, resyncMs: 20 });
  try {
    const running = await g.submit(g.a, 1);
    g.reconciler.start();
    await g.eventually(running, (r) => r.status === 'PROCESSING');
    await g.commands.requestCancel(running, g.a.account.id, g.now); // a notification missed: the resync finds it
    await g.eventually(running, (r) => r.status === 'FAILED');
  } finally {
    await g.close();
  }
});

test('cluster mode: a sweep makes sure of every FfmpegCommand, another pass only of those it starts', async () => {
  const ensured: string[] = [];
  const deleted = new Set<string>();
  const resourcesDouble = async (command: { id: string }) => {
    ensured.push(command.id);
    return deleted.has(command.id) ? ('deleted' as const) : ('present' as const);
  };
  const f = await reconcilerFixture({ capacity: 3, ensureResource: resourcesDouble });
  try {
    const first = await f.submit(f.a, 1);
    const waiting = await f.submit(f.a, 4); // waits: 4 vCPUs next to the running one is over the plan's 4
    await f.reconciler.reconcileOnce();
    assert.deepEqual(new Set(ensured), new Set([first, waiting]));
    assert.deepEqual(startedIds(f.backend), [first]);

    await f.commands.update(waiting, { status: 'FAILED' }); // out of the way
    ensured.length = 0;
    const second = await f.submit(f.b, 1);
    const gone = await f.submit(f.b, 1);
    deleted.add(gone);
    await f.reconciler.reconcileOnce({ checkCancels: false, sweep: false });
    // What the sweep it asked for looks at comes after (that pass runs on its own, once the database answers).
    assert.deepEqual(ensured.slice(0, 2), [second, gone], 'only the commands it starts');
    assert.deepEqual(startedIds(f.backend), [first, second]);

    // The deleted resource asked for a sweep, which stops its command.
    const stopped = await f.eventually(gone, (r) => r.status === 'FAILED');
    assert.deepEqual(
      [stopped.errorStatus, stopped.errorMessage],
      ['CANCELLED', 'its FfmpegCommand resource was deleted; the command was stopped'],
    );
    assert.ok(ensured.slice(2).includes(first), 'the sweep looked at every active command');
    assert.deepEqual(startedIds(f.backend), [first, second]);
  } finally {
    await f.close();
  }
});

test('a plan lowered after submission is looked for by sweeps only: the first pass and each resync', async () => {
  const f = await reconcilerFixture({ capacity: 8 });
  try {
    const big = await f.submit(f.a, 3);
    await f.plans.update('four', { maxVcpus: 2 });
    await f.reconciler.reconcileOnce({ checkCancels: false, sweep: false });
    assert.equal((await f.commands.findById(big))!.status, 'QUEUED');
    await f.reconciler.reconcileOnce({ checkCancels: false, sweep: true });
    assert.equal((await f.commands.findById(big))!.errorStatus, 'PLAN_LIMIT_EXCEEDED');
  } finally {
    await f.close();
  }

  const g = await reconcilerFixture({ capacity: 8, resyncMs: 20 });
  try {
    g.reconciler.start(); // the first pass sweeps, finding nothing
    await new Promise((r) => setTimeout(r, 50));
    // Lowered first: a resync between the submit and the update would start the command under the old plan.
    // Passes that do not sweep leave it QUEUED (it is not admissible), so only a sweep can fail it.
    await g.plans.update('four', { maxVcpus: 2 });
    const big = await g.submit(g.a, 3);
    assert.equal((await g.eventually(big, (r) => r.status === 'FAILED')).errorStatus, 'PLAN_LIMIT_EXCEEDED');
  } finally {
    await g.close();
  }
});

test("cancel of a chain in its second step keeps the first step's outputs; a late result changes nothing", async () => {
  const f = await reconcilerFixture();
  try {
    const row = await insertTwoStepChain(f);
    await f.reconciler.reconcileOnce();
    f.backend.succeed(f.backend.lastFor(row.id));
    await f.eventually(row.id, (r) => r.currentStep === 1);
    const second = await f.backend.startedJob(row.id, 1);

    await f.commands.requestCancel(row.id, f.a.account.id, f.now);
    await f.reconciler.reconcileOnce();
    const cancelled = (await f.commands.findById(row.id))!;
    assert.deepEqual([cancelled.status, cancelled.errorStatus], ['FAILED', 'CANCELLED']);
    assert.ok(f.backend.deleted.includes(second.ref.name));

    // The runner was killed, but its result may still arrive: it is dropped (and its job deleted again).
    const deletions = f.backend.deleted.length;
    f.backend.succeed(second);
    for (const deadline = Date.now() + 5000; f.backend.deleted.length === deletions;) {
      if (Date.now() > deadline) assert.fail('the late result was not handled');
      await new Promise((r) => setTimeout(r, 5));
    }
    const after = (await f.commands.findById(row.id))!;
    assert.deepEqual([after.status, after.errorStatus, after.ffmpegSeconds], ['FAILED', 'CANCELLED', cancelled.ffmpegSeconds]);
    assert.deepEqual(
      (await f.commands.outputFiles(row.id)).map((x) => [x.alias, x.status, x.isDeleted]),
      [['out_1', 'STORED', false]],
    );
  } finally {
    await f.close();
  }
});

type ReconcilerFixture = Awaited<ReturnType<typeof reconcilerFixture>>;

test('cluster queueing: a pass releases only as many steps as the gate lets go; the rest stay QUEUED with no job', async () => {
  const f = await reconcilerFixture({ capacity: null, gate: true });
  try {
    f.gate!.releasableNow = 2;
    const ids = [await f.submit(f.a, 1), await f.submit(f.b, 1), await f.submit(f.a, 1)];
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), ids.slice(0, 2));
    assert.equal((await f.commands.findById(ids[2]))!.status, 'QUEUED');
    await f.reconciler.reconcileOnce(); // the released pods wait for room: the gate says 0
    assert.equal(f.backend.started.length, 2);
    f.reconciler.start(); // the gate asks for passes once the reconciler runs
    f.gate!.open(5); // room freed: the gate asks for a pass itself
    await f.eventually(ids[2], (r) => r.status === 'PROCESSING');
    assert.deepEqual(startedIds(f.backend), ids);
  } finally {
    await f.close();
  }
});

test('cluster queueing: maxVcpus caps the vCPUs of released steps, first come first served', async () => {
  const f = await reconcilerFixture({ capacity: null, gate: true });
  try {
    f.gate!.maxVcpus = 3;
    const ids = [await f.submit(f.a, 2), await f.submit(f.b, 2), await f.submit(f.b, 1)];
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [ids[0]], 'the 2-vCPU command is not overtaken by the 1-vCPU one');
  } finally {
    await f.close();
  }
});

test('a step whose pod finds no room goes back to the queue at its place, its job deleted, and runs as a new attempt when released', async () => {
  const f = await reconcilerFixture({ capacity: null, gate: true });
  try {
    const chain = await insertTwoStepChain(f);
    const later = await f.submit(f.a, 1);
    f.gate!.releasableNow = 1;
    await f.reconciler.reconcileOnce();
    f.backend.succeed(f.backend.lastFor(chain.id)); // step 1 done; step 2 starts at once
    const step2 = await f.backend.startedJob(chain.id, 1);
    f.gate!.releasableNow = 0;
    f.backend.report(step2.ref, { type: 'requeue', reason: 'its pod found no node with room for 10 s (0/2 nodes are available)' });
    const queued = await f.eventually(chain.id, (r) => r.status === 'QUEUED');
    assert.equal(queued.currentStep, 1, 'it waits at the step it had reached');
    assert.equal(queued.queueReason, 'its pod found no node with room for 10 s (0/2 nodes are available)');
    assert.equal(queued.processingStage, null);
    assert.ok(f.backend.deleted.includes(step2.ref.name));
    assert.deepEqual(
      f.events.map((e) => [e.id, e.reason]),
      [
        [chain.id, 'Started'],
        [chain.id, 'StepSucceeded'],
        [chain.id, 'Requeued'],
      ],
    );
    f.reconciler.start();
    f.gate!.open(1);
    const again = await f.eventually(chain.id, (r) => r.status === 'PROCESSING');
    assert.equal(
      (await f.backend.startedJob(chain.id, 1, step2.ref.attempt + 1)).ref.name,
      `ffc-${chain.id}-s1-a${step2.ref.attempt + 1}`,
      'step 2 again, as a new Job',
    );
    assert.equal(again.queueReason, null);
    assert.equal(again.stepRetries, 0, 'waiting is not a failure: it does not count against the attempts');
    assert.equal((await f.commands.findById(later))!.status, 'QUEUED', 'the requeued step went first: it kept its place');
  } finally {
    await f.close();
  }
});

test('a lost pod runs its step again as the next attempt, the record unchanged; the third loss fails INTERRUPTED', async () => {
  const f = await reconcilerFixture({ capacity: null, gate: true, maxAttempts: 3 });
  try {
    const id = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const first = f.backend.lastFor(id);
    f.backend.report(first.ref, { type: 'stage', stage: ProcessingStage.FFMPEG_PROCESSING });
    f.backend.report(first.ref, {
      type: 'lost',
      reason: 'its pod was lost on node node-b: EvictionByEvictionAPI (Eviction API: evicting)',
    });
    const second = await f.backend.startedJob(id, 0, 2);
    assert.equal(second.ref.name, `ffc-${id}-s0-a2`);
    const row = (await f.commands.findById(id))!;
    assert.equal(row.status, 'PROCESSING');
    assert.equal(row.processingStage, 'DOWNLOADING');
    assert.equal(row.errorStatus, null);
    assert.ok(f.backend.deleted.includes(first.ref.name), "the lost attempt's Job is deleted");
    assert.match(f.events.at(-1)!.message, /step 1 runs again as attempt 2: its pod was lost on node node-b/);

    f.backend.report(second.ref, { type: 'lost', reason: 'lost again' });
    f.backend.report((await f.backend.startedJob(id, 0, 3)).ref, { type: 'lost', reason: 'the node went away' });
    const failed = await f.eventually(id, (r) => r.status === 'FAILED');
    assert.equal(failed.errorStatus, 'INTERRUPTED');
    assert.match(
      failed.errorMessage!,
      /step 1 was started 3 times and lost each time; it was not tried again \(last: the node went away\)/,
    );
  } finally {
    await f.close();
  }
});

test('a step larger than any node fails UNSCHEDULABLE at once with the reason, even while the cluster is full, and makes no job', async () => {
  const f = await reconcilerFixture({ capacity: null, gate: true });
  try {
    f.backend.unfitReason = 'the step asks 8 vCPUs ...; the largest, node-a, has 2 vCPUs';
    const big = await f.submit(f.a, 4); // the most plan "four" allows
    await f.reconciler.reconcileOnce();
    assert.equal((await f.commands.findById(big))!.status, 'PROCESSING', 'a 4-vCPU step fits the double');
    await f.plans.create({
      name: 'large',
      maxVcpus: 16,
      maxCommandRunSeconds: 600,
      requestsPerMinute: 100,
      storageQuotaBytes: 1e12,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: true,
    });
    const huge = await f.submit(await newCaller(new AccountsRepo(f.database.db), 'L', 'large'), 8);
    f.gate!.releasableNow = 0; // the cluster is full: it fails all the same, not when its turn comes
    await f.reconciler.reconcileOnce();
    const failed = await f.eventually(huge, (r) => r.status === 'FAILED');
    assert.equal(failed.errorStatus, 'UNSCHEDULABLE');
    assert.equal(failed.errorMessage, 'the step asks 8 vCPUs ...; the largest, node-a, has 2 vCPUs');
    assert.ok(!startedIds(f.backend).includes(huge));
  } finally {
    await f.close();
  }
});

test('queued commands of a plan of higher priority start first, then oldest first', async () => {
  const f = await reconcilerFixture({ capacity: 1 });
  try {
    await f.plans.create({
      name: 'gold',
      maxVcpus: 4,
      maxCommandRunSeconds: 600,
      requestsPerMinute: 100,
      storageQuotaBytes: 1e12,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: true,
      priority: 5,
    });
    const gold = await newCaller(new AccountsRepo(f.database.db), 'G', 'gold');
    const running = await f.submit(f.a, 1);
    await f.reconciler.reconcileOnce();
    const older = await f.submit(f.b, 1);
    const paid = await f.submit(gold, 1);
    f.reconciler.submitted(); // as the API does: the pass finds the capacity taken and two waiting
    f.backend.succeed(f.backend.lastFor(running));
    await f.eventually(paid, (r) => r.status === 'PROCESSING');
    assert.equal((await f.commands.findById(older))!.status, 'QUEUED');
  } finally {
    await f.close();
  }
});

test('Kueue mode: a command stays QUEUED with its Job waiting in the cluster queue, counted against its plan, until Kueue releases it', async () => {
  const f = await reconcilerFixture({ capacity: null, kueue: true });
  try {
    const [first, second, third] = [await f.submit(f.a, 2), await f.submit(f.a, 2), await f.submit(f.a, 2)];
    await f.reconciler.reconcileOnce();
    assert.deepEqual(startedIds(f.backend), [first, second], "plan 'four' holds two 2-vCPU commands, waiting or running");
    for (const id of [first, second]) {
      const row = (await f.commands.findById(id))!;
      assert.deepEqual([row.status, row.inClusterQueue, row.processingStage, row.attempt], ['QUEUED', true, null, 1]);
    }
    f.backend.report(f.backend.lastFor(first).ref, { type: 'released' });
    const running = await f.eventually(first, (r) => r.status === 'PROCESSING');
    assert.equal(running.inClusterQueue, false);
    assert.equal(running.processingStage, 'DOWNLOADING');
    assert.equal((await f.commands.findById(third))!.status, 'QUEUED');
    assert.equal((await f.commands.findById(third))!.inClusterQueue, false, 'over the plan: not handed over');

    // Kueue preempts the running one: QUEUED again, its Job kept (Kueue resumes it later).
    f.backend.report(f.backend.lastFor(first).ref, { type: 'suspended', reason: 'Kueue suspended its Job again (Preempted)' });
    const back = await f.eventually(first, (r) => r.status === 'QUEUED');
    assert.deepEqual([back.inClusterQueue, back.queueReason], [true, 'Kueue suspended its Job again (Preempted)']);
    assert.ok(!f.backend.deleted.includes(f.backend.lastFor(first).ref.name));
    f.backend.report(f.backend.lastFor(first).ref, { type: 'released' });
    await f.eventually(first, (r) => r.status === 'PROCESSING');

    // A cancel of a command waiting in the cluster queue deletes its Job; the plan's room goes to the next.
    await f.commands.requestCancel(second, f.a.account.id, f.now);
    await f.reconciler.reconcileOnce();
    assert.equal((await f.commands.findById(second))!.errorStatus, 'CANCELLED');
    assert.ok(f.backend.deleted.includes(f.backend.lastFor(second).ref.name));
    await f.reconciler.reconcileOnce();
    assert.equal((await f.commands.findById(third))!.inClusterQueue, true);
  } finally {
    await f.close();
  }
});

test("Kueue mode: a chain's next step waits in the cluster queue again; a step's lost Job is made again", async () => {
  const f = await reconcilerFixture({ capacity: null, kueue: true });
  try {
    const chain = await insertTwoStepChain(f);
    await f.reconciler.reconcileOnce();
    f.backend.report(f.backend.lastFor(chain.id).ref, { type: 'released' });
    await f.eventually(chain.id, (r) => r.status === 'PROCESSING');
    f.backend.succeed(f.backend.lastFor(chain.id));
    const step2 = await f.backend.startedJob(chain.id, 1);
    const waiting = (await f.commands.findById(chain.id))!;
    assert.deepEqual([waiting.status, waiting.inClusterQueue, waiting.currentStep], ['QUEUED', true, 1]);
    f.backend.jobs.delete(step2.ref.name); // someone deleted the suspended Job
    await f.reconciler.reconcileOnce();
    assert.equal(f.backend.started.filter((r) => r.ref.name === step2.ref.name).length, 2, 'made again, same name');
  } finally {
    await f.close();
  }
});
