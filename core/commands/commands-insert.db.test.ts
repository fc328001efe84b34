// A new command's row as insert() returns it is the row the database holds: the poll cache serves it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { CommandsRepo } from './commands-repo.ts';

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
