// A new command's row as insert() and insertMany() return it is the row the database holds: the poll cache serves it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { CommandsRepo, QuotaUsedUp } from './commands-repo.ts';

test('insert returns what a read finds: the columns left to the database (seq, created_at, defaults) included', async () => {
  const database = await openTestDatabase();
  try {
    const caller = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    const commands = new CommandsRepo(database.db);
    const first = testCommandRow(caller, {
      ffmpeg_command: '-i {{in_1}} -vf scale=160:120 {{out_1}}',
      input_files: { in_1: 'https://example.com/a.mp4' },
    });
    const second = testCommandRow(caller);
    const before = Date.now();
    const inserted = [await commands.insert(first), await commands.insert({ ...second, currentStep: 3, metadata: { b: 1, a: 'x' } })];

    for (const row of inserted) assert.deepEqual(row, await commands.findById(row.id));
    assert.equal(inserted[1].seq, inserted[0].seq + 1);
    assert.ok(inserted[0].createdAt.getTime() >= before - 1000, 'created_at from the database');
    assert.equal(inserted[0].currentStep, 0, 'a default');
    assert.equal(inserted[1].currentStep, 3, 'a given value over the default');
    assert.equal(inserted[0].startedAt, null);
    assert.equal(inserted[0].progress, null);
  } finally {
    await database.close();
  }
});

test('insertMany stores submits that came together in one statement, each as insert would have', async () => {
  const database = await openTestDatabase();
  try {
    const caller = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    const commands = new CommandsRepo(database.db);
    const rows = Array.from({ length: 5 }, () => testCommandRow(caller));
    const quotas = { accountId: caller.account.id, month: '2026-11-01', storageQuotaBytes: 1e12, processingQuotaBytesPerMonth: 1e12 };
    const stored = await commands.insertMany(rows, quotas);

    assert.deepEqual(
      stored.map((r) => r.id),
      rows.map((r) => r.id),
      'in the order given',
    );
    for (const row of stored) assert.deepEqual(row, await commands.findById(row.id));
    for (let i = 1; i < stored.length; i++) assert.ok(stored[i].seq > stored[i - 1].seq, 'seq in the order of the submits');
    assert.equal(stored[0].currentStep, 0, 'a default, not a null');

    await assert.rejects(
      commands.insertMany([testCommandRow(caller), { ...testCommandRow(caller), currentStep: 2 }]),
      /must leave out the same columns/,
    );
  } finally {
    await database.close();
  }
});

test('insertMany stores none of them when the quotas have no room', async () => {
  const database = await openTestDatabase();
  try {
    const caller = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    const commands = new CommandsRepo(database.db);
    await commands.insert({
      ...testCommandRow(caller),
      status: 'SUCCESS',
      processedBytes: 5000,
      createdAt: new Date('2026-11-02T00:00:00Z'),
    });
    const quotas = { accountId: caller.account.id, month: '2026-11-01', storageQuotaBytes: 1e12, processingQuotaBytesPerMonth: 5000 };
    const rows = Array.from({ length: 3 }, () => testCommandRow(caller));

    await assert.rejects(commands.insertMany(rows, quotas), (err) => err instanceof QuotaUsedUp && !err.room.processingRoom);
    for (const row of rows) assert.equal(await commands.findById(row.id), null);
  } finally {
    await database.close();
  }
});
