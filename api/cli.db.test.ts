// The accounts/keys CLI against a real database, and the keys it makes against the API's auth.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { AccountsRepo } from '../core/accounts/accounts-repo.ts';
import { openDatabase } from '../core/db/database.ts';
import { createTestDatabaseUrl } from '../core/db/test-database.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli.ts';

let dropDb: () => Promise<void>;
let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ffop-cli-'));
  const db = await createTestDatabaseUrl();
  // PGlite in a folder: the CLI opens and closes the database on every call, as a user's shell would.
  process.env.FFOP_DATABASE_URL = db.url === 'pglite:memory' ? `pglite:${join(dir, 'db')}` : db.url;
  dropDb = db.drop;
});
after(async () => {
  await dropDb();
  await rm(dir, { recursive: true, force: true });
});

async function cli(...args: string[]): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runCli(args, (l) => out.push(l));
  return { code, out };
}

test('create an account, keys in two environments, list, change plan, revoke', async () => {
  assert.equal((await cli('accounts', 'create', 'acme', '--plan', 'pro')).code, 0);
  assert.match((await cli('accounts', 'list')).out.join('\n'), /acme\tpro/);
  const main = (await cli('keys', 'create', 'acme')).out[0];
  const test = (await cli('keys', 'create', 'acme', '--env', 'test', '--label', 'ci')).out[0];
  assert.match(main, /^ffo_[0-9a-f]{12}_[A-Za-z0-9_-]{32}$/);
  const listed = (await cli('keys', 'list', 'acme')).out;
  assert.equal(listed.length, 2);
  assert.ok(listed.some((l) => l.includes('\ttest\tactive\tci')));
  assert.ok(!listed.join('').includes(main.slice(17)), 'secrets are never listed');

  const database = await openDatabase(process.env.FFOP_DATABASE_URL!);
  try {
    const accounts = new AccountsRepo(database.db);
    assert.equal((await accounts.authenticate(test))?.environment, 'test');
    assert.equal((await accounts.authenticate(main))?.account.plan.name, 'pro');
  } finally {
    await database.close();
  }
  assert.equal((await cli('accounts', 'set-plan', 'acme', 'free')).code, 0);
  assert.equal((await cli('keys', 'revoke', main)).code, 0);
  const again = await cli('keys', 'revoke', main);
  assert.equal(again.code, 2);
  const database2 = await openDatabase(process.env.FFOP_DATABASE_URL!);
  try {
    const accounts = new AccountsRepo(database2.db);
    assert.equal(await accounts.authenticate(main), null);
    assert.equal((await accounts.authenticate(test))?.account.plan.name, 'free');
  } finally {
    await database2.close();
  }
});

test('mistakes are explained, with exit code 2', async () => {
  assert.match((await cli('accounts', 'create', 'x', '--plan', 'gold')).out[0], /unknown plan "gold"/);
  assert.match((await cli('keys', 'create', 'nobody')).out[0], /no account named "nobody"/);
  assert.equal((await cli('keys', 'create', 'acme', '--env', 'Bad Env')).code, 2);
  assert.equal((await cli('frobnicate')).code, 2);
  assert.match((await cli('plans')).out.join('\n'), /free\tmax vCPUs 4/);
});

test('while the embedded service runs, the CLI works (through its admin socket when PGlite is locked)', async () => {
  const { startService } = await import('../e2e/harness.ts');
  const { execFile } = await import('node:child_process');
  const svc = await startService();
  try {
    const env = { ...process.env, FFOP_DATA_DIR: svc.dataDir, FFOP_DATABASE_URL: svc.service.database.driver === 'pglite' ? `pglite:${join(svc.dataDir, 'db')}` : process.env.FFOP_DATABASE_URL_OF_SERVICE ?? '' };
    if (svc.service.database.driver !== 'pglite') return; // PostgreSQL has no lock: covered by the test above
    const run = (...args: string[]) =>
      new Promise<{ code: number; stdout: string }>((resolve) =>
        execFile(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'cli.ts'), ...args], { env }, (err, stdout) =>
          resolve({ code: err ? (err as any).code : 0, stdout })),
      );
    const created = await run('accounts', 'create', 'live', '--plan', 'pro');
    assert.equal(created.code, 0, created.stdout);
    const key = (await run('keys', 'create', 'live')).stdout.trim();
    const res = await svc.client(key).get('/v1/commands');
    assert.equal(res.status, 200, 'a key made while the service runs works at once');
    // The service has just authenticated the key (and remembers it briefly): revoking it through the
    // CLI still takes effect on the very next request.
    const keyId = key.split('_')[1];
    assert.equal((await run('keys', 'revoke', keyId)).code, 0);
    assert.equal((await svc.client(key).get('/v1/commands')).status, 401, 'a revoked key is refused at once');
  } finally {
    await svc.close();
  }
});
