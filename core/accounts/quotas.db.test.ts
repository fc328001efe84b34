// Quotas by plan, read from the database: a new command needs this month's processing quota and room
// for its outputs; stored files count until deleted or failed.
import { newCaller } from './testing/new-caller.ts';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { CommandsRepo } from '../commands/commands-repo.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { FilesRepo } from '../files/files-repo.ts';
import { FileStatus, StoreType } from '../files/file-status.ts';
import { AccountsRepo } from './accounts-repo.ts';
import { PlansRepo } from './plans-repo.ts';
import { Quotas } from './quotas.ts';
import { PlanRefusal } from './plan-refusal.ts';

const NOW = new Date('2026-11-23T12:00:00Z');

/** An account on a plan with 1,000 bytes of storage and 5,000 bytes of processing a month. */
async function quotaFixture() {
  const database = await openTestDatabase();
  await new PlansRepo(database.db).create({
    name: 'tiny',
    maxVcpus: 2,
    maxCommandRunSeconds: 60,
    requestsPerMinute: 10,
    storageQuotaBytes: 1000,
    processingQuotaBytesPerMonth: 5000,
    privateFiles: false,
  });
  const accounts = new AccountsRepo(database.db);
  const caller = await newCaller(accounts, 'acme', 'tiny');
  const account = caller.account;
  const commands = new CommandsRepo(database.db);
  const files = new FilesRepo(database.db);
  const processed = async (bytes: number, createdAt: Date) => {
    const row = testCommandRow(caller);
    await commands.insert({ ...row, status: 'SUCCESS', processedBytes: bytes, createdAt });
  };
  const stored = (sizeBytes: number, extra: { isDeleted?: boolean; status?: FileStatus } = {}) =>
    files.insert({
      id: randomUUID(),
      accountId: account.id,
      environmentName: 'main',
      serviceStoreType: StoreType.STORED_FILE,
      status: extra.status ?? FileStatus.STORED,
      storageKey: `k/${randomUUID()}`,
      fileName: 'f.mp4',
      isPrivate: false,
      sizeBytes,
      isDeleted: extra.isDeleted ?? false,
    });
  const quotas = new Quotas(files, () => NOW);
  /** A new command through the submit path: stored only within the quotas. */
  const submit = () => quotas.storeNewCommand(account, async (limits) => void (await commands.insert(testCommandRow(caller), limits)));
  const queued = async () => (await commands.active()).length;
  return { database, quotas, caller, processed, stored, submit, queued };
}

test('a new command is refused once this month has processed the quota; earlier months do not count', async () => {
  const f = await quotaFixture();
  try {
    await f.processed(4000, new Date('2026-10-31T23:59:59Z'));
    await f.processed(4999, new Date('2026-11-01T00:00:00Z'));
    await f.submit();
    await f.processed(1, new Date('2026-11-20T00:00:00Z'));
    await assert.rejects(
      f.submit(),
      (err: Error) => err instanceof PlanRefusal && /processing quota exceeded: 0\.000 GB processed this month/.test(err.message),
    );
    assert.equal(await f.queued(), 1, 'the refused command was not stored');
  } finally {
    await f.database.close();
  }
});

test('a new command is refused when stored files fill the storage quota; deleted and failed files do not count', async () => {
  const f = await quotaFixture();
  try {
    await f.stored(600);
    await f.stored(5000, { isDeleted: true });
    await f.stored(5000, { status: 'FAILED' });
    await f.submit();
    await assert.rejects(f.quotas.checkStorage(f.caller.account, 401), /storage quota exceeded/);
    await f.stored(400);
    await assert.rejects(f.submit(), (err: Error) => err instanceof PlanRefusal && /storage quota exceeded/.test(err.message));
    assert.equal(await f.queued(), 1, 'the refused command was not stored');
  } finally {
    await f.database.close();
  }
});
