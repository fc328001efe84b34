// The reconciler's queue reads: which QUEUED commands fit their account's plan next to what it runs
// (FIFO per account, oldest first across accounts), and which ask more than a lowered plan allows.
import { newCaller } from '../accounts/testing/new-caller.ts';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo, type Caller } from '../accounts/accounts-repo.ts';
import { PlansRepo } from '../accounts/plans-repo.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { CommandStatus } from './command-status.ts';
import { CommandsRepo } from './commands-repo.ts';

/** A database with plan 'small' (4 vCPUs) and accounts A and B on it. */
async function queueFixture() {
  const database = await openTestDatabase();
  const accounts = new AccountsRepo(database.db);
  const plans = new PlansRepo(database.db);
  await plans.create({
    name: 'small',
    maxVcpus: 4,
    maxCommandRunSeconds: 600,
    requestsPerMinute: 100,
    storageQuotaBytes: 1e9,
    processingQuotaBytesPerMonth: 1e9,
    privateFiles: false,
  });
  const caller = (name: string) => newCaller(accounts, name, 'small');
  const commands = new CommandsRepo(database.db);
  const labels = new Map<string, string>();
  /** Submits a command with these vCPUs; `label` names it in assertions. */
  const submit = async (who: Caller, label: string, vcpus: number, status: CommandStatus = CommandStatus.QUEUED) => {
    const row = testCommandRow(who, { vcpu_count: vcpus });
    await commands.insert({ ...row, status });
    labels.set(row.id, label);
    return row.id;
  };
  const names = (rows: { id: string }[]) => rows.map((r) => labels.get(r.id));
  return { database, commands, plans, a: await caller('A'), b: await caller('B'), submit, names };
}

test('admissible: oldest first across accounts, each account while its plan allows', async () => {
  const f = await queueFixture();
  try {
    await f.submit(f.a, 'a1', 2);
    await f.submit(f.b, 'b1', 4);
    await f.submit(f.a, 'a2', 2);
    await f.submit(f.a, 'a3', 1); // 2 + 2 + 1 > 4
    await f.submit(f.b, 'b2', 1); // 4 + 1 > 4
    const rows = await f.commands.admissible(100);
    assert.deepEqual(f.names(rows), ['a1', 'b1', 'a2']);
    assert.deepEqual(
      rows.map((r) => r.planMaxVcpus),
      [4, 4, 4],
    );
  } finally {
    await f.database.close();
  }
});

test("admissible: an account's running commands count, and a command that does not fit hides its later ones", async () => {
  const f = await queueFixture();
  try {
    await f.submit(f.a, 'a-running', 3, CommandStatus.PROCESSING);
    await f.submit(f.a, 'a1', 2); // 3 + 2 > 4: blocks a2 although a2 alone would fit
    await f.submit(f.a, 'a2', 1);
    await f.submit(f.b, 'b1', 1);
    await f.submit(f.a, 'a-done', 1, CommandStatus.SUCCESS);
    assert.deepEqual(f.names(await f.commands.admissible(100)), ['b1']);
  } finally {
    await f.database.close();
  }
});

test('admissible: at most the limit, oldest first', async () => {
  const f = await queueFixture();
  try {
    for (const label of ['a1', 'a2', 'a3']) await f.submit(f.a, label, 1);
    await f.submit(f.b, 'b1', 1);
    assert.deepEqual(f.names(await f.commands.admissible(2)), ['a1', 'a2']);
  } finally {
    await f.database.close();
  }
});

test("admissible: an account's long queue ahead of another's: each account's oldest that fit, then the limit", async () => {
  const f = await queueFixture();
  try {
    for (let i = 1; i <= 30; i++) await f.submit(f.a, `a${i}`, 1);
    await f.submit(f.b, 'b1', 3);
    await f.submit(f.b, 'b2', 2); // 3 + 2 > 4: hides b3
    await f.submit(f.b, 'b3', 1);
    assert.deepEqual(f.names(await f.commands.admissible(100)), ['a1', 'a2', 'a3', 'a4', 'b1']);
    assert.deepEqual(f.names(await f.commands.admissible(3)), ['a1', 'a2', 'a3']);
    // Started ones leave the queue; the account's running vCPUs count against its next.
    await f.commands.startQueued((await f.commands.admissible(1))[0].id, {}, new Date());
    assert.deepEqual(f.names(await f.commands.admissible(100)), ['a2', 'a3', 'a4', 'b1']);
  } finally {
    await f.database.close();
  }
});

test('overPlan: commands asking more than the plan allows now, hidden from admissible', async () => {
  const f = await queueFixture();
  try {
    await f.submit(f.a, 'a1', 3);
    await f.submit(f.b, 'b1', 1);
    await f.plans.update('small', { maxVcpus: 2 });
    assert.deepEqual(f.names(await f.commands.overPlan()), ['a1']);
    assert.deepEqual(f.names(await f.commands.admissible(100)), ['b1']);
  } finally {
    await f.database.close();
  }
});

test('runningAndAdmissible: what runs (oldest first, with every field a pass reads), admissible(limit) and how many wait, in one read', async () => {
  const f = await queueFixture();
  try {
    assert.deepEqual(await f.commands.runningAndAdmissible(3), { running: [], admissible: [], queued: 0 });
    const r1 = await f.submit(f.a, 'a-running', 3, CommandStatus.PROCESSING);
    await f.submit(f.a, 'a1', 2); // 3 + 2 > 4: hides a2
    await f.submit(f.a, 'a2', 1);
    await f.submit(f.b, 'b1', 1);
    await f.submit(f.b, 'b2', 2);
    await f.submit(f.b, 'b3', 1);
    const r2 = await f.submit(f.b, 'b-running', 1, CommandStatus.PROCESSING);
    await f.commands.update(r2, { processingStage: 'UPLOADING', ffmpegSeconds: 1.5, processedBytes: 2 ** 40, stepRetries: 1 });
    const inClusterQueue = await f.submit(f.a, 'a-in-cluster-queue', 1); // counts against A's plan, not as queued
    await f.commands.update(inClusterQueue, { inClusterQueue: true });
    await f.commands.update(r1, { resourceCreatedAt: new Date('2026-01-02T03:04:05.678Z') });
    const read = await f.commands.runningAndAdmissible(2);
    assert.deepEqual(read.admissible, await f.commands.admissible(2));
    assert.deepEqual(f.names(read.admissible), ['b1', 'b2']);
    assert.equal(read.queued, 5, 'a1, a2, b1, b2, b3');
    const row = async (id: string) => (await f.commands.findById(id))!;
    const fields = (c: Awaited<ReturnType<typeof row>>, finishing: boolean) => ({
      id: c.id,
      accountId: c.accountId,
      status: c.status,
      vcpuCount: c.vcpuCount,
      currentStep: c.currentStep,
      attempt: c.attempt,
      stepRetries: c.stepRetries,
      inClusterQueue: c.inClusterQueue,
      ffmpegSeconds: c.ffmpegSeconds,
      processedBytes: c.processedBytes,
      resourceCreatedAt: c.resourceCreatedAt,
      finishing,
    });
    // The one-step b-running is past ffmpeg: it is finishing.
    assert.deepEqual(read.running, [fields(await row(r1), false), fields(await row(r2), true)]);
  } finally {
    await f.database.close();
  }
});
