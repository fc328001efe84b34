// GET /v1/commands on its own: the command routes over a real database, with the page of commands
// handed over as the poll cache would hand it (the same read object until the command changes).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Hono } from 'hono';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
import { Quotas } from '../../core/accounts/quotas.ts';
import { CommandsRepo, listRowOf, type CommandWithOutputs } from '../../core/commands/commands-repo.ts';
import { openTestDatabase } from '../../core/db/testing/test-database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { testCommandRow } from '../commands/testing/test-command-row.ts';
import { commandListItem } from '../commands/serialize.ts';
import { commandRoutes } from './commands.ts';

test('list: items as commandListItem gives them; a running command moves with the clock, an ended one changes only with its read', async (t) => {
  const database = await openTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'ffop-list-route-'));
  t.after(async () => {
    await database.close();
    await rm(dir, { recursive: true, force: true });
  });
  const commands = new CommandsRepo(database.db);
  const owner = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
  const running = testCommandRow(owner);
  const ended = testCommandRow(owner);
  await commands.insert(running);
  await commands.insert(ended);
  await commands.update(running.id, { status: 'PROCESSING' });
  const read = async (id: string): Promise<CommandWithOutputs> => (await commands.findWithOutputs(id))!;
  const createdAt = (await read(ended.id)).row.createdAt.getTime();
  await commands.update(ended.id, { status: 'SUCCESS', finishedAt: new Date(createdAt + 1500), ffmpegSeconds: 0.25 });
  // What the poll cache holds: one read per command, replaced when the command changes.
  const page = [await read(ended.id), await read(running.id)];
  let now = new Date(Date.now() + 2000);
  const routes = commandRoutes({
    commands,
    readCommand: async () => null,
    insertCommand: async () => {},
    listCommands: async () => page,
    quotas: new Quotas(new FilesRepo(database.db), () => now),
    storage: new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: 'http://127.0.0.1:9', signingKey: 'k'.repeat(32) }),
    dispatch: () => {},
    clock: () => now,
  });
  const app = new Hono<AppEnv>();
  app.use('*', async (c, next) => {
    c.set('caller', owner);
    await next();
  });
  app.route('/', routes);
  const list = async () => {
    const res = await app.request('/v1/commands?limit=10');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    return (await res.json()) as Record<string, unknown>[];
  };
  const expected = () => page.map((found) => JSON.parse(JSON.stringify(commandListItem(listRowOf(found), now))) as unknown);

  const first = await list();
  assert.deepEqual(first, expected());
  assert.equal(first[0].status, 'SUCCESS');
  assert.equal(first[0].processing_seconds, 1.5);

  now = new Date(now.getTime() + 60_000);
  const second = await list();
  assert.deepEqual(second, expected());
  assert.deepEqual(second[0], first[0]);
  assert.equal((second[1].processing_seconds as number) - (first[1].processing_seconds as number), 60);

  // The ended command changes (here its error message): the cache's new read of it shows the change.
  await commands.update(ended.id, { errorMessage: 'changed after the end' });
  page[0] = await read(ended.id);
  const third = await list();
  assert.deepEqual(third, expected());
  assert.equal(third[0].error_message, 'changed after the end');
});
