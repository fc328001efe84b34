// A finished step is stored only while it still runs: a result read before a cancel changes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testOutputRow } from '../files/testing/test-output-row.ts';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
type Caller = Awaited<ReturnType<typeof newCaller>>;
import { openTestDatabase } from '../db/testing/test-database.ts';
import { CommandsRepo } from './commands-repo.ts';
import { ErrorStatus } from './error-status.ts';

/** A fresh database with one command of `owner`, PROCESSING its first step at `attempt`. */
async function withRunningCommand(
  attempt: number,
  body: (f: { caller: Caller; commands: CommandsRepo; row: ReturnType<typeof testCommandRow> }) => Promise<void>,
): Promise<void> {
  const database = await openTestDatabase();
  try {
    const caller = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    const commands = new CommandsRepo(database.db);
    const row = testCommandRow(caller);
    await commands.insert({ ...row, status: 'PROCESSING', currentStep: 0, attempt });
    await body({ caller, commands, row });
  } finally {
    await database.close();
  }
}

test('completeStep stores the outputs and the next state only for the running step and attempt', () =>
  withRunningCommand(2, async ({ caller, commands, row }) => {
    const output = testOutputRow(caller, row.id, { sizeBytes: 10 });
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
  }));

test('completeStep stores each output as given, and a step that ran again overwrites its earlier record', () =>
  withRunningCommand(1, async ({ caller, commands, row }) => {
    const media = { mime_type: 'video/mp4', duration: 3.2, width: 160, height: 120, streams: [{ codec: 'h264', tags: { a: "it's" } }] };
    const file = testOutputRow(caller, row.id, { sizeBytes: 2 ** 40 + 3, media: media as never });
    // A folder output: fields the file above does not give, and a null one.
    const folder = testOutputRow(caller, row.id, {
      alias: 'OUTPUT_FOLDER',
      fileName: 'output_folder.zip',
      sizeBytes: 300,
      fileCount: 3,
      sizeCompressedBytes: 120,
      originalFileUrl: null,
    });
    const step = { commandId: row.id, step: 0, attempt: 1 };
    assert.equal(await commands.completeStep(step, [file, folder], { processingStage: null }), true);

    const stored = new Map((await commands.outputFiles(row.id)).map((f) => [f.id, f]));
    for (const given of [file, folder]) {
      const found = stored.get(given.id)!;
      for (const [key, value] of Object.entries(given)) assert.deepEqual(found[key as keyof typeof found], value, key);
      assert.equal(found.isDeleted, false, 'a default kept');
    }
    assert.equal(stored.get(file.id)!.fileCount, null, 'a column only the other row gives');

    await commands.completeStep(step, [{ ...file, sizeBytes: 7, media: null }], { processingStage: null });
    const again = (await commands.outputFiles(row.id)).find((f) => f.id === file.id)!;
    assert.deepEqual([again.sizeBytes, again.media], [7, null]);
  }));
