// POST /v1/commands/{id}/cancel on its own: the command routes over a real database, with no
// reconciler behind them, so a recorded cancel stays pending and can be asked for again.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Hono } from 'hono';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
type Caller = Awaited<ReturnType<typeof newCaller>>;
import { Quotas } from '../../core/accounts/quotas.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import type { Database } from '../../core/db/database.ts';
import { openTestDatabase } from '../../core/db/testing/test-database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { testCommandRow } from '../commands/testing/test-command-row.ts';
import { commandRoutes } from './commands.ts';

/** The command routes over `commands`, answering as `caller`; `asked` collects the reconciler's wake-ups. */
function cancelRoutes(database: Database, commands: CommandsRepo, dir: string, now: Date, asked: string[]) {
  const routes = commandRoutes({
    commands,
    readCommand: async () => null,
    insertCommand: async (row, quotas) => void (await commands.insert(row, quotas)),
    listCommands: async () => [],
    quotas: new Quotas(new FilesRepo(database.db), () => now),
    storage: new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: 'http://127.0.0.1:9', signingKey: 'k'.repeat(32) }),
    dispatch: () => {},
    cancelRequested: (id) => asked.push(id),
    clock: () => now,
  });
  return (caller: Caller) => {
    const app = new Hono<AppEnv>();
    app.use('*', async (c, next) => {
      c.set('caller', caller);
      await next();
    });
    app.route('/', routes);
    return (path: string) => app.request(path, { method: 'POST' });
  };
}

test('cancel: 202 with the record while QUEUED (again on a repeat), 404 for unknown and foreign ids, 409 once ended', async () => {
  const database = await openTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'ffop-cancel-route-'));
  try {
    const accounts = new AccountsRepo(database.db);
    const commands = new CommandsRepo(database.db);
    const owner = await newCaller(accounts, 'owner', 'pro');
    const stranger = await newCaller(accounts, 'stranger', 'pro');
    const asked: string[] = [];
    const now = new Date('2026-11-23T12:00:00Z');
    const as = cancelRoutes(database, commands, dir, now, asked);
    const row = testCommandRow(owner);
    await commands.insert(row);

    for (let i = 0; i < 2; i++) {
      const res = await as(owner)(`/v1/commands/${row.id}/cancel`);
      assert.equal(res.status, 202);
      const body = (await res.json()) as Record<string, unknown>;
      assert.equal(body.command_id, row.id);
      assert.equal(body.status, 'QUEUED');
      assert.equal(body.progress, null);
    }
    assert.deepEqual(asked, [row.id, row.id]);
    assert.deepEqual((await commands.findById(row.id))!.cancelRequestedAt, now);

    const foreign = await as(stranger)(`/v1/commands/${row.id}/cancel`);
    assert.deepEqual([foreign.status, await foreign.json()], [404, { detail: 'Command not found' }]);
    const unknown = await as(owner)('/v1/commands/00000000-0000-4000-8000-000000000000/cancel');
    assert.equal(unknown.status, 404);

    await commands.update(row.id, { status: 'SUCCESS', finishedAt: now });
    const ended = await as(owner)(`/v1/commands/${row.id}/cancel`);
    assert.deepEqual([ended.status, await ended.json()], [409, { detail: `command ${row.id} has already ended (SUCCESS)` }]);
    assert.equal(asked.length, 2);
  } finally {
    await database.close();
    await rm(dir, { recursive: true, force: true });
  }
});

/** A repository whose command is ended the moment its cancel is recorded, as a reconciler woken by the notification may. */
class CommandsRepoEndingAtOnce extends CommandsRepo {
  override async requestCancel(id: string, accountId: string, now: Date) {
    const outcome = await super.requestCancel(id, accountId, now);
    if (outcome?.requested) await this.update(id, { status: 'FAILED', errorStatus: 'CANCELLED', finishedAt: now });
    return outcome;
  }
}

test('the answer is the command as it was when the cancel was recorded, even if it ends at once', async () => {
  const database = await openTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'ffop-cancel-route-'));
  try {
    const commands = new CommandsRepoEndingAtOnce(database.db);
    const owner = await newCaller(new AccountsRepo(database.db), 'owner', 'pro');
    const now = new Date('2026-11-23T12:00:00Z');
    const row = testCommandRow(owner);
    await commands.insert(row);
    const res = await cancelRoutes(database, commands, dir, now, [])(owner)(`/v1/commands/${row.id}/cancel`);
    assert.equal(res.status, 202);
    assert.equal(((await res.json()) as { status: string }).status, 'QUEUED');
    assert.equal((await commands.findById(row.id))!.status, 'FAILED');
  } finally {
    await database.close();
    await rm(dir, { recursive: true, force: true });
  }
});
