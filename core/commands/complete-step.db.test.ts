// A finished step is stored only while it still runs: a result read before a cancel changes nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { FileStatus, StoreType } from '../files/file-status.ts';
import { CommandsRepo } from './commands-repo.ts';
import { ErrorStatus } from './error-status.ts';

test('completeStep stores the outputs and the next state only for the running step and attempt', async () => {
  const database = await openTestDatabase();
  try {
    const caller = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    const commands = new CommandsRepo(database.db);
    const row = testCommandRow(caller);
    await commands.insert({ ...row, status: 'PROCESSING', currentStep: 0, attempt: 2 });
    const output = {
      id: randomUUID(),
      accountId: caller.account.id,
      environmentName: 'main',
      commandId: row.id,
      alias: 'out_1',
      serviceStoreType: StoreType.OUTPUT,
      status: FileStatus.STORED,
      storageKey: `k/${randomUUID()}`,
      fileName: 'o.mp4',
      isPrivate: false,
      sizeBytes: 10,
    };
    const success = { status: 'SUCCESS' as const, finishedAt: new Date() };

    assert.equal(await commands.completeStep({ commandId: row.id, step: 0, attempt: 1 }, [output], success), false, 'an earlier attempt');
    await commands.update(row.id, { status: 'FAILED', errorStatus: ErrorStatus.CANCELLED });
    assert.equal(await commands.completeStep({ commandId: row.id, step: 0, attempt: 2 }, [output], success), false, 'cancelled meanwhile');
    assert.equal((await commands.findById(row.id))!.status, 'FAILED');
    assert.deepEqual(await commands.outputFiles(row.id), []);

    await commands.update(row.id, { status: 'PROCESSING', errorStatus: null });
    assert.equal(await commands.completeStep({ commandId: row.id, step: 0, attempt: 2 }, [output], success), true);
    assert.equal((await commands.findById(row.id))!.status, 'SUCCESS');
    assert.deepEqual(
      (await commands.outputFiles(row.id)).map((f) => f.id),
      [output.id],
    );
  } finally {
    await database.close();
  }
});
