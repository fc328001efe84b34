// What the reconciler reports to metrics at admission and at every kind of end, with a fixed clock so the
// durations are exact: from the full rows it holds, and from the light rows of a pass (read back then).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { PlansRepo } from '../accounts/plans-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { CommandsRepo } from '../commands/commands-repo.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { Reconciler } from '../engine/reconciler.ts';
import type { JobBackend, JobListener, JobRequest } from '../engine/job-backend.ts';
import { createLogger } from '../logger.ts';
import { unknownMedia } from '../media/unknown-media.ts';
import { LocalStorage } from '../storage/local-storage.ts';
import type { EngineMetrics } from './metrics.ts';

/** A job backend double: jobs are names in a set; a test plays the runner. */
class RecordingJobBackend implements JobBackend {
  readonly capacityVcpus = 8;
  readonly started: JobRequest[] = [];
  readonly jobs = new Set<string>();
  private readonly listeners: JobListener[] = [];
  async ensureJob(request: JobRequest): Promise<void> {
    this.jobs.add(request.ref.name);
    this.started.push(request);
  }
  async listJobNames(): Promise<Set<string>> {
    return new Set(this.jobs);
  }
  async deleteJob(name: string): Promise<void> {
    this.jobs.delete(name);
  }
  subscribe(listener: JobListener): void {
    this.listeners.push(listener);
  }
  succeed(request: JobRequest): void {
    const outputs = request.spec.outputs.map((o) => ({ alias: o.alias, fileName: o.fileName, size: 10, media: unknownMedia(o.fileName) }));
    for (const l of this.listeners) l(request.ref, { type: 'result', ok: true, ffmpegSeconds: 1.5, inputBytes: 0, outputs });
  }
  async close(): Promise<void> {}
}

/** An EngineMetrics double that keeps every call. */
class RecordingEngineMetrics implements EngineMetrics {
  readonly calls: unknown[][] = [];
  commandAdmitted(...args: Parameters<EngineMetrics['commandAdmitted']>): void {
    this.calls.push(['admitted', ...args]);
  }
  commandEnded(...args: Parameters<EngineMetrics['commandEnded']>): void {
    this.calls.push(['ended', ...args]);
  }
  fileTaskEnded(...args: Parameters<EngineMetrics['fileTaskEnded']>): void {
    this.calls.push(['file', ...args]);
  }
}

async function fixture(o: { resyncMs?: number } = {}) {
  const database = await openTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'ffop-engine-metrics-'));
  const plans = new PlansRepo(database.db);
  await plans.create({
    name: 'four',
    maxVcpus: 4,
    maxCommandRunSeconds: 600,
    requestsPerMinute: 100,
    storageQuotaBytes: 1e12,
    processingQuotaBytesPerMonth: 1e12,
    privateFiles: false,
  });
  const caller = await newCaller(new AccountsRepo(database.db), 'A', 'four');
  const commands = new CommandsRepo(database.db);
  const backend = new RecordingJobBackend();
  const metrics = new RecordingEngineMetrics();
  const submittedAt = new Date('2026-11-23T12:00:00Z');
  let now = new Date(submittedAt.getTime() + 30_000);
  const reconciler = new Reconciler({
    commands,
    backend,
    storage: new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: 'http://127.0.0.1:9', signingKey: 'k'.repeat(32) }),
    logger: createLogger('silent'),
    limits: { downloadMaxBytes: 1e9, downloadTimeoutSeconds: 60, uploadAllowanceSeconds: 60, allow: [], maxThreads: 2 },
    clock: () => now,
    maxAttempts: 1,
    workDir: dir,
    resyncMs: o.resyncMs ?? 3_600_000,
    metrics,
  });
  const submit = async (vcpus: number): Promise<string> => {
    const row = testCommandRow(caller, { vcpu_count: vcpus });
    await commands.insert({ ...row, createdAt: submittedAt });
    return row.id;
  };
  const ended = async (count: number) => {
    for (const deadline = Date.now() + 5000; metrics.calls.filter((c) => c[0] === 'ended').length < count;) {
      if (Date.now() > deadline) assert.fail(`metrics saw ${JSON.stringify(metrics.calls)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  return {
    plans,
    backend,
    metrics,
    reconciler,
    submit,
    ended,
    advance: (seconds: number) => (now = new Date(now.getTime() + seconds * 1000)),
    close: async () => {
      await reconciler.stop();
      await database.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

test('admitted with the plan and the wait since submission; a success with ffmpeg time and the total since submission', async () => {
  const f = await fixture();
  try {
    await f.submit(1);
    await f.reconciler.reconcileOnce();
    assert.deepEqual(f.metrics.calls, [['admitted', 'four', 30]]);
    f.advance(12);
    f.backend.succeed(f.backend.started[0]);
    await f.ended(1);
    assert.deepEqual(f.metrics.calls[1], ['ended', 'SUCCESS', null, 1.5, 42]);
  } finally {
    await f.close();
  }
});

test('ends known only from light rows are measured too: INTERRUPTED (lost job) and PLAN_LIMIT_EXCEEDED', async () => {
  const f = await fixture({ resyncMs: 20 });
  try {
    await f.submit(1);
    await f.reconciler.reconcileOnce();
    f.backend.jobs.clear(); // the process running it went away; maxAttempts is 1
    f.advance(10);
    await f.reconciler.reconcileOnce();
    assert.deepEqual(f.metrics.calls[1], ['ended', 'FAILED', 'INTERRUPTED', 0, 40]);

    // The resync looks for commands over a lowered plan (started only now: passes it asks for never
    // overlap with the one the failure asked for, where a direct reconcileOnce() could).
    await f.plans.update('four', { maxVcpus: 2 });
    await f.submit(4);
    f.reconciler.start();
    await f.ended(2);
    assert.deepEqual(f.metrics.calls[2], ['ended', 'FAILED', 'PLAN_LIMIT_EXCEEDED', 0, 40]);
    assert.equal(f.metrics.calls.length, 3, 'every end is reported once');
  } finally {
    await f.close();
  }
});
