// The commands list: newest first, a page at a time, each item with its outputs' count and live bytes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testOutputRow } from '../files/testing/test-output-row.ts';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { FilesRepo } from '../files/files-repo.ts';
import { CommandsRepo, listRowOf } from './commands-repo.ts';
import { watchedPollCache } from './poll-cache.ts';

test("list items count each command's outputs and their live bytes; pages go newest first; other accounts stay out", async () => {
  const database = await openTestDatabase();
  try {
    const accounts = new AccountsRepo(database.db);
    const owner = await newCaller(accounts, 'owner', 'pro');
    const other = await newCaller(accounts, 'other', 'pro');
    const commands = new CommandsRepo(database.db);
    const files = new FilesRepo(database.db);
    const command = async (caller: typeof owner, minute: number) => {
      const row = testCommandRow(caller);
      await commands.insert({ ...row, createdAt: new Date(Date.UTC(2026, 10, 23, 12, minute)) });
      return row.id;
    };
    const output = (commandId: string, sizeBytes: number, isDeleted = false) =>
      files.insert(testOutputRow(owner, commandId, { sizeBytes, isDeleted }));
    const oldest = await command(owner, 1);
    const middle = await command(owner, 2);
    const newest = await command(owner, 3);
    await command(other, 4);
    await output(middle, 100);
    await output(middle, 50, true); // deleted: counted as an output, its bytes not
    await output(newest, 7);

    const polls = await watchedPollCache(database, commands);
    const list = async (limit: number, offset: number) => (await polls.list(owner.account.id, limit, offset)).map(listRowOf);
    const page = await list(10, 0);
    assert.deepEqual(
      page.map((r) => [r.id, r.outputFileCount, r.storedBytes]),
      [
        [newest, 1, 7],
        [middle, 2, 100],
        [oldest, 0, 0],
      ],
    );
    assert.deepEqual(
      (await list(1, 1)).map((r) => r.id),
      [middle],
    );
    assert.deepEqual(await list(10, 3), []);

    // The items are now in memory; a new output is seen through the database's change notification.
    await output(oldest, 9);
    for (const deadline = Date.now() + 5000; ; await new Promise((r) => setTimeout(r, 10))) {
      const item = (await list(10, 0)).find((r) => r.id === oldest)!;
      if (item.outputFileCount === 1 && item.storedBytes === 9) break;
      assert.ok(Date.now() < deadline, 'the list still shows the output missing');
    }
    await polls.stop();
  } finally {
    await database.close();
  }
});
