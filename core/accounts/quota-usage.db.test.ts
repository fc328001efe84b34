// The running sums behind the quota checks (migration 0006's triggers) against the sums they replace,
// after every kind of write the service makes to files and commands.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { eq, sql } from 'drizzle-orm';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { CommandsRepo } from '../commands/commands-repo.ts';
import { rowsOf } from '../db/migrate.ts';
import { commands, files } from '../db/schema.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import type { Database } from '../db/database.ts';
import { FilesRepo, quotaUsageSql } from '../files/files-repo.ts';
import { FileStatus, StoreType } from '../files/file-status.ts';
import { AccountsRepo } from './accounts-repo.ts';
import { newCaller } from './testing/new-caller.ts';

const NOVEMBER = new Date('2026-11-01T00:00:00Z');

/** Two accounts with commands and files; `check` compares the running sums with sums over the rows. */
async function usageFixture() {
  const database = await openTestDatabase();
  const accounts = new AccountsRepo(database.db);
  const callers = [await newCaller(accounts, 'a', 'pro'), await newCaller(accounts, 'b', 'pro')];
  const commandsRepo = new CommandsRepo(database.db);
  const filesRepo = new FilesRepo(database.db);
  const newCommand = async (caller: (typeof callers)[number], createdAt: Date, processedBytes = 0) => {
    const row = testCommandRow(caller);
    await commandsRepo.insert({ ...row, createdAt, processedBytes });
    return row.id;
  };
  const newFile = async (caller: (typeof callers)[number], fields: Partial<typeof files.$inferInsert>) => {
    const id = randomUUID();
    await filesRepo.insert({
      id,
      accountId: caller.account.id,
      environmentName: 'main',
      serviceStoreType: StoreType.STORED_FILE,
      status: FileStatus.QUEUED,
      storageKey: `k/${id}`,
      fileName: 'f.mp4',
      isPrivate: false,
      ...fields,
    });
    return id;
  };
  async function check(what: string) {
    for (const caller of callers) {
      const id = caller.account.id;
      const [row] = rowsOf<{ stored: number; processed: number }>(
        await database.db.execute(quotaUsageSql(id, NOVEMBER.toISOString().slice(0, 10))),
      );
      const usage = { storedBytes: Number(row.stored), processedBytes: Number(row.processed) };
      assert.equal(await filesRepo.storageUsedBytes(id), usage.storedBytes, what);
      assert.deepEqual(usage, await summedUsage(database, id, NOVEMBER), `${what} (account ${caller.account.name})`);
    }
  }
  return { database, callers, newCommand, newFile, check };
}

/** The quota figures summed over the rows, as before migration 0006. */
async function summedUsage(database: Database, accountId: string, since: Date) {
  const result = await database.db.execute(sql`select
    (select coalesce(sum(coalesce(size_bytes, expected_size_bytes, 0)), 0) from files
      where account_id = ${accountId} and not is_deleted and status <> 'FAILED')::float8 as stored,
    (select coalesce(sum(processed_bytes), 0) from commands
      where account_id = ${accountId} and created_at >= ${since.toISOString()})::float8 as processed`);
  const [row] = rowsOf<{ stored: number; processed: number }>(result);
  return { storedBytes: Number(row.stored), processedBytes: Number(row.processed) };
}

test('stored bytes follow uploads, stores, size changes, failures, deletions and removals', async () => {
  const f = await usageFixture();
  const [a, b] = f.callers;
  const update = (id: string, patch: Partial<typeof files.$inferInsert>) => f.database.db.update(files).set(patch).where(eq(files.id, id));
  try {
    await f.check('nothing yet');
    const upload = await f.newFile(a, { expectedSizeBytes: 5000 }); // an upload in progress counts its announced size
    await f.newFile(b, { status: FileStatus.STORED, sizeBytes: 700 });
    await f.check('inserted');
    await update(upload, { status: FileStatus.UPLOADED, sizeBytes: 4990 });
    await f.check('upload completed with another size');
    await update(upload, { status: FileStatus.STORED });
    await f.check('status only');
    const failing = await f.newFile(a, { status: FileStatus.DOWNLOADING, expectedSizeBytes: 300 });
    await update(failing, { status: FileStatus.FAILED });
    await f.check('failed');
    await update(failing, { status: FileStatus.STORED, sizeBytes: 10 }); // not a transition the service makes; still counted right
    await f.check('revived');
    await update(upload, { isDeleted: true });
    await f.check('deleted');
    await f.database.db.delete(files).where(eq(files.id, failing));
    await f.check('row removed');
  } finally {
    await f.database.close();
  }
});

test('processed bytes count in the UTC month a command was created, through its updates', async () => {
  const f = await usageFixture();
  const [a, b] = f.callers;
  const repo = new CommandsRepo(f.database.db);
  try {
    const october = await f.newCommand(a, new Date('2026-10-31T23:59:59.999Z'), 4000);
    const november = await f.newCommand(a, NOVEMBER);
    await f.newCommand(b, new Date('2026-11-20T10:00:00Z'), 123);
    await f.check('inserted');
    await repo.update(november, { status: 'SUCCESS', processedBytes: 2500 });
    await f.check('a command finished');
    await repo.update(november, { processedBytes: 2600 });
    await f.check('bytes changed again');
    await repo.update(october, { createdAt: new Date('2026-11-02T00:00:00Z') });
    await f.check('moved into November');
    await f.database.db.delete(commands).where(eq(commands.id, october));
    await f.check('row removed');
  } finally {
    await f.database.close();
  }
});

test("the migration's backfill computes the sums of rows written before it", async () => {
  const f = await usageFixture();
  const [a, b] = f.callers;
  try {
    await f.newCommand(a, NOVEMBER, 800);
    await f.newCommand(b, new Date('2026-09-05T00:00:00Z'), 50);
    await f.newFile(a, { status: FileStatus.STORED, sizeBytes: 70 });
    await f.newFile(b, { expectedSizeBytes: 9 });
    await f.newFile(b, { status: FileStatus.FAILED, sizeBytes: 1000 });
    await f.database.db.execute(sql`delete from account_storage`);
    await f.database.db.execute(sql`delete from account_monthly_processing`);
    const migration = await readFile(fileURLToPath(new URL('../db/migrations/0006_quota_usage.sql', import.meta.url)), 'utf8');
    const backfill = migration.split('--> statement-breakpoint').filter((s) => /^\s*(--[^\n]*\n\s*)*INSERT INTO account_/.test(s));
    assert.equal(backfill.length, 2);
    for (const statement of backfill) await f.database.db.execute(sql.raw(statement));
    await f.check('backfilled');
  } finally {
    await f.database.close();
  }
});
