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
import { Quotas } from '../../core/accounts/quotas.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { openTestDatabase } from '../../core/db/testing/test-database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import type { AppEnv } from '../auth.ts';
import { testCommandRow } from '../commands/testing/test-command-row.ts';
import { commandRoutes } from './commands.ts';

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
    const routes = commandRoutes({
      commands,
      readCommand: async () => null,
      insertCommand: async (row) => void (await commands.insert(row)),
      listCommands: async () => [],
      quotas: new Quotas(new FilesRepo(database.db), () => now),
      storage: new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: 'http://127.0.0.1:9', signingKey: 'k'.repeat(32) }),
      dispatch: () => {},
      cancelRequested: (id) => asked.push(id),
      clock: () => now,
    });
    const as = (caller: typeof owner) => {
      const app = new Hono<AppEnv>();
      app.use('*', async (c, next) => {
        c.set('caller', caller);
        await next();
      });
      app.route('/', routes);
      return (path: string) => app.request(path, { method: 'POST' });
    };
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
