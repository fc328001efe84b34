// The log table on a real database: pieces appended in order, only the last characters kept (cut in
// the statement itself), the count of what was cut, one step or all, and the prune by the command's end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { CommandLogsRepo } from './command-logs-repo.ts';
import { CommandsRepo } from './commands-repo.ts';

test('appends keep the last characters of each step and count what was cut; the prune takes ended commands past the retention', async () => {
  const database = await openTestDatabase();
  try {
    const caller = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    const commands = new CommandsRepo(database.db);
    const ended = { ...testCommandRow(caller), finishedAt: new Date('2026-11-01T00:00:00Z') };
    const running = testCommandRow(caller);
    await commands.insert(ended);
    await commands.insert(running);
    const logs = new CommandLogsRepo(database.db, 10); // keeps 10 characters per step

    await logs.append(ended.id, 0, 'abcdef');
    await logs.append(ended.id, 0, 'ghij');
    assert.deepEqual(await logs.read(ended.id), [{ step: 0, text: 'abcdefghij', cutChars: 0 }]);
    await logs.append(ended.id, 0, 'klm');
    await logs.append(ended.id, 1, 'a piece longer than ten');
    await logs.append(running.id, 0, 'still running');
    assert.deepEqual(await logs.read(ended.id), [
      { step: 0, text: 'defghijklm', cutChars: 3 },
      { step: 1, text: 'r than ten', cutChars: 13 },
    ]);
    assert.deepEqual(await logs.read(ended.id, 1), [{ step: 1, text: 'r than ten', cutChars: 13 }]);

    // Ended before the cut-off: gone; a running command's log stays.
    assert.equal(await logs.pruneEndedBefore(new Date('2026-11-02T00:00:00Z'), 1000), 2);
    assert.deepEqual(await logs.read(ended.id), []);
    assert.equal((await logs.read(running.id)).length, 1);
  } finally {
    await database.close();
  }
});
