// The commands list: newest first, a page at a time, each item with its outputs' count and live bytes.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { FilesRepo } from '../files/files-repo.ts';
import { FileStatus, StoreType } from '../files/file-status.ts';
import { CommandsRepo } from './commands-repo.ts';

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
      files.insert({
        id: randomUUID(),
        accountId: owner.account.id,
        environmentName: 'main',
        commandId,
        alias: 'out_1',
        serviceStoreType: StoreType.OUTPUT,
        status: FileStatus.STORED,
        storageKey: `k/${randomUUID()}`,
        fileName: 'o.mp4',
        isPrivate: false,
        sizeBytes,
        isDeleted,
      });
    const oldest = await command(owner, 1);
    const middle = await command(owner, 2);
    const newest = await command(owner, 3);
    await command(other, 4);
    await output(middle, 100);
    await output(middle, 50, true); // deleted: counted as an output, its bytes not
    await output(newest, 7);

    const page = await commands.listForAccount(owner.account.id, 10, 0);
    assert.deepEqual(
      page.map((r) => [r.id, r.outputFileCount, r.storedBytes]),
      [
        [newest, 1, 7],
        [middle, 2, 100],
        [oldest, 0, 0],
      ],
    );
    assert.deepEqual(
      (await commands.listForAccount(owner.account.id, 1, 1)).map((r) => r.id),
      [middle],
    );
    assert.deepEqual(await commands.listForAccount(owner.account.id, 10, 3), []);
  } finally {
    await database.close();
  }
});
