// A command that ffmpeg would stop on is stored already ended: never QUEUED for a reconciler, and
// announced like any ended command (a webhook message in the same transaction).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { WebhooksRepo } from '../webhooks/webhooks-repo.ts';
import { CommandsRepo } from './commands-repo.ts';
import { endsAtSubmit, insertEndedAtSubmit } from './ended-at-submit.ts';

test("stored FAILED with ffmpeg's message, processing_seconds 0, never active, and its webhook message queued", async () => {
  const database = await openTestDatabase();
  try {
    const caller = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    await new WebhooksRepo(database.db).set(caller.account.id, caller.environment, 'https://example.com/hook', false, new Date());
    const commands = new CommandsRepo(database.db);
    const row = testCommandRow(caller, { ffmpeg_command: '-f lavfi -i testsrc=d=1 -vf nosuchfilter {{out_1}}' });
    assert.ok(endsAtSubmit(row));
    const stored = await insertEndedAtSubmit(database.db, row);

    assert.deepEqual(stored, await commands.findById(row.id));
    assert.equal(stored.status, 'FAILED');
    assert.equal(stored.errorStatus, 'FFMPEG_FAILED');
    assert.match(stored.errorMessage!, /^No such filter: 'nosuchfilter'\n--\nffmpeg stops here; found when the command was submitted/);
    assert.deepEqual(stored.finishedAt, stored.createdAt);
    assert.deepEqual(await commands.active(), []);
    const deliveries = await new WebhooksRepo(database.db).listDeliveries(caller.account.id, caller.environment, 10, 0);
    assert.deepEqual(
      deliveries.map((d) => [d.eventType, d.subjectId]),
      [['command.finished', row.id]],
    );

    const runnable = testCommandRow(caller);
    assert.ok(!endsAtSubmit(runnable));
  } finally {
    await database.close();
  }
});
