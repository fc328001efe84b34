// The poll path's read: a command with its output files in one query, scoped by account.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { singleCommandRow } from '../../api/commands/submission.ts';
import { AccountsRepo, type Caller } from '../accounts/accounts-repo.ts';
import { openTestDatabase } from '../db/test-database.ts';
import type { Database } from '../db/database.ts';
import { FilesRepo } from '../files/files-repo.ts';
import { CommandsRepo } from './commands-repo.ts';

describe('CommandsRepo.findWithOutputsForAccount', () => {
  let database: Database;
  let commands: CommandsRepo;
  let filesRepo: FilesRepo;
  let owner: Caller;
  let stranger: Caller;

  const callerFor = async (name: string): Promise<Caller> => {
    const accounts = new AccountsRepo(database.db);
    const account = await accounts.createAccount(name, 'pro');
    return (await accounts.authenticate((await accounts.createKey(account.id, 'main')).key))!;
  };
  const newCommand = async (caller: Caller): Promise<string> => {
    const row = singleCommandRow(caller, {
      ffmpeg_command: '-f lavfi -i testsrc=d=1 {{out_1}} {{out_2}}',
      output_files: { out_1: 'a.mp4', out_2: 'b.mp4' },
      max_command_run_seconds: 60,
      vcpu_count: 1,
      is_private: false,
    });
    await commands.insert(row);
    return row.id!;
  };
  const output = (caller: Caller, commandId: string, alias: string, createdAt: Date) =>
    filesRepo.insert({
      id: randomUUID(), accountId: caller.account.id, environmentName: 'main', commandId, alias, serviceStoreType: 'OUTPUT',
      status: 'STORED', storageKey: `k/${alias}`, fileName: `${alias}.mp4`, isPrivate: false, createdAt,
    });

  before(async () => {
    database = await openTestDatabase();
    commands = new CommandsRepo(database.db);
    filesRepo = new FilesRepo(database.db);
    owner = await callerFor('owner');
    stranger = await callerFor('stranger');
  });
  after(() => database.close());

  test('returns the command and its outputs, oldest first', async () => {
    const id = await newCommand(owner);
    await output(owner, id, 'out_2', new Date(Date.now() + 1000));
    await output(owner, id, 'out_1', new Date());
    const found = await commands.findWithOutputsForAccount(owner.account.id, id);
    assert.equal(found?.row.id, id);
    assert.deepEqual(found?.files.map((f) => f.alias), ['out_1', 'out_2']);
  });

  test('a command without outputs yet has an empty list', async () => {
    const id = await newCommand(owner);
    assert.deepEqual((await commands.findWithOutputsForAccount(owner.account.id, id))?.files, []);
  });

  test("another account's command is not found, nor is an unknown id", async () => {
    const id = await newCommand(owner);
    assert.equal(await commands.findWithOutputsForAccount(stranger.account.id, id), null);
    assert.equal(await commands.findWithOutputsForAccount(owner.account.id, randomUUID()), null);
  });
});
