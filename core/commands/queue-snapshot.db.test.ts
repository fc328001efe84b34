// The queue snapshot's query: QUEUED commands in the order admission takes them (plan priority, then
// arrival), without those waiting in the cluster's queue; and the starts of the recent window.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { CommandStatus } from './command-status.ts';
import { CommandsRepo } from './commands-repo.ts';
import { loadQueueState } from './queue-snapshot.ts';

test('loadQueueState: priority then arrival, only the service queue, and the recent starts', async () => {
  const database = await openTestDatabase();
  try {
    const accounts = new AccountsRepo(database.db);
    const commands = new CommandsRepo(database.db);
    const free = await newCaller(accounts, 'F', 'free'); // priority 0
    const pro = await newCaller(accounts, 'P', 'pro'); // priority 10
    const now = Date.now();
    const insert = async (who: typeof free, patch: Partial<Parameters<CommandsRepo['insert']>[0]> = {}) => {
      const row = { ...testCommandRow(who), status: CommandStatus.QUEUED, ...patch };
      await commands.insert(row);
      return row.id;
    };
    assert.deepEqual(await loadQueueState(database.db, new Date(now - 60_000)), { order: [], recentStarts: 0, firstRecentStart: null });

    const f1 = await insert(free);
    const p1 = await insert(pro);
    const f2 = await insert(free);
    await insert(pro, { inClusterQueue: true }); // Kueue's to order
    await insert(pro, { status: CommandStatus.PROCESSING, startedAt: new Date(now - 30_000) });
    await insert(free, { status: CommandStatus.SUCCESS, startedAt: new Date(now - 10_000), finishedAt: new Date(now) });
    await insert(free, { status: CommandStatus.SUCCESS, startedAt: new Date(now - 3_600_000), finishedAt: new Date(now) }); // too old
    const state = await loadQueueState(database.db, new Date(now - 60_000));
    assert.deepEqual(state.order, [p1, f1, f2]);
    assert.equal(state.recentStarts, 2);
    assert.equal(state.firstRecentStart?.getTime(), now - 30_000);
  } finally {
    await database.close();
  }
});
