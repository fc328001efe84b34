// The poll path on a real database: a command with its outputs in one query, scoped by account, served
// from memory until the database notifies a change, whoever made it.
import { newCaller } from '../accounts/testing/new-caller.ts';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { testOutputRow } from '../files/testing/test-output-row.ts';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { openDatabase } from '../db/database.ts';
import { createTestDatabaseUrl, testDatabaseKind } from '../db/testing/test-database.ts';
import { FilesRepo, type NewFileRow } from '../files/files-repo.ts';
import { CommandsRepo } from './commands-repo.ts';
import { watchedPollCache } from './poll-cache.ts';

/** A database with accounts 'owner' and 'stranger', and a poll cache listening to it. */
async function pollFixture() {
  const { url, drop } = await createTestDatabaseUrl();
  const database = await openDatabase(url);
  const commands = new CommandsRepo(database.db);
  const filesRepo = new FilesRepo(database.db);
  let loads = 0;
  const counted = new CommandsRepo(database.pollReads);
  const findWithOutputs = counted.findWithOutputs.bind(counted);
  counted.findWithOutputs = (id) => (loads++, findWithOutputs(id));
  let statements = 0;
  const insertMany = commands.insertMany.bind(commands);
  commands.insertMany = (rows, quotas) => (statements++, insertMany(rows, quotas));
  const polls = await watchedPollCache(database, commands, { reads: counted });
  const accounts = new AccountsRepo(database.db);
  const owner = await newCaller(accounts, 'owner', 'pro');
  const stranger = await newCaller(accounts, 'stranger', 'pro');
  const newCommand = async (): Promise<string> => {
    const row = testCommandRow(owner, {
      ffmpeg_command: '-f lavfi -i testsrc=d=1 {{out_1}} {{out_2}}',
      output_files: { out_1: 'a.mp4', out_2: 'b.mp4' },
    });
    await commands.insert(row);
    return row.id;
  };
  const output = (commandId: string, alias: string, createdAt = new Date()): NewFileRow =>
    testOutputRow(owner, commandId, { alias, storageKey: `k/${alias}`, fileName: `${alias}.mp4`, createdAt });
  /** Polls until `check` holds (a notification is asynchronous), failing after 5 s. */
  const eventually = async (id: string, check: (found: Awaited<ReturnType<typeof polls.find>>) => boolean) => {
    for (const deadline = Date.now() + 5000; ; await new Promise((r) => setTimeout(r, 10))) {
      const found = await polls.find(owner.account.id, id);
      if (check(found)) return found;
      if (Date.now() > deadline) assert.fail(`the cache still serves ${JSON.stringify(found?.row.status)} after 5 s`);
    }
  };
  return {
    url,
    database,
    commands,
    filesRepo,
    polls,
    owner,
    stranger,
    newCommand,
    output,
    eventually,
    loads: () => loads,
    insertStatements: () => statements,
    close: async () => {
      await polls.stop();
      await database.close();
      await drop();
    },
  };
}

test('a command and its outputs, oldest first; none yet is an empty list', async () => {
  const f = await pollFixture();
  try {
    const id = await f.newCommand();
    assert.deepEqual((await f.polls.find(f.owner.account.id, id))?.files, []);
    const other = await f.newCommand();
    await f.filesRepo.insert(f.output(other, 'out_2', new Date(Date.now() + 1000)));
    await f.filesRepo.insert(f.output(other, 'out_1'));
    const found = await f.polls.find(f.owner.account.id, other);
    assert.equal(found?.row.id, other);
    assert.deepEqual(
      found?.files.map((x) => x.alias),
      ['out_1', 'out_2'],
    );
  } finally {
    await f.close();
  }
});

test("another account's command is not found, nor is an unknown id", async () => {
  const f = await pollFixture();
  try {
    const id = await f.newCommand();
    await f.polls.find(f.owner.account.id, id);
    assert.equal(await f.polls.find(f.stranger.account.id, id), null);
    assert.equal(await f.polls.find(f.owner.account.id, randomUUID()), null);
  } finally {
    await f.close();
  }
});

test('polls of an unchanged command read the database once; every kind of write is seen', async () => {
  const f = await pollFixture();
  try {
    const id = await f.newCommand();
    for (let i = 0; i < 20; i++) assert.equal((await f.polls.find(f.owner.account.id, id))?.row.status, 'QUEUED');
    assert.equal(f.loads(), 1);

    await f.commands.update(id, { status: 'PROCESSING', currentStep: 0, attempt: 1 });
    await f.eventually(id, (found) => found?.row.status === 'PROCESSING');

    const out = f.output(id, 'out_1');
    assert.equal(await f.commands.completeStep({ commandId: id, step: 0, attempt: 1 }, [out], { status: 'SUCCESS' }), true);
    await f.eventually(id, (found) => found?.row.status === 'SUCCESS' && found.files.length === 1);

    await f.filesRepo.markDeleted(f.owner.account.id, [out.id]);
    await f.eventually(id, (found) => found?.files[0]?.isDeleted === true);
  } finally {
    await f.close();
  }
});

test(
  'a write by another process (another connection) is seen',
  { skip: testDatabaseKind() === 'pglite' && 'PGlite has one connection, in this process' },
  async () => {
    const f = await pollFixture();
    const other = await openDatabase(f.url);
    try {
      const id = await f.newCommand();
      await f.polls.find(f.owner.account.id, id);
      await new CommandsRepo(other.db).update(id, { status: 'FAILED', errorStatus: 'CANCELLED' });
      await f.eventually(id, (found) => found?.row.errorStatus === 'CANCELLED');
    } finally {
      await other.close();
      await f.close();
    }
  },
);

test('40 submits in one turn of the event loop are stored in one statement; each is served to its polls', async () => {
  const f = await pollFixture();
  try {
    const quotas = { accountId: f.owner.account.id, month: '2026-11-01', storageQuotaBytes: 1e12, processingQuotaBytesPerMonth: 1e12 };
    const rows = Array.from({ length: 40 }, () => testCommandRow(f.owner));
    await Promise.all(rows.map((row) => f.polls.insert(row, quotas)));

    assert.equal(f.insertStatements(), 1);
    for (const row of rows) assert.equal((await f.polls.find(f.owner.account.id, row.id))?.row.status, 'QUEUED');
    assert.equal(f.loads(), 0, 'served from what the submits stored');
  } finally {
    await f.close();
  }
});
