// Authenticated keys are remembered for 5 s; a change made by another process (another connection:
// a cluster-mode CLI, another API replica) is seen as soon as the database notifies it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from '../db/database.ts';
import { createTestDatabaseUrl, testDatabaseKind } from '../db/testing/test-database.ts';
import { AccountsRepo } from './accounts-repo.ts';
import { KEY_CACHE_TTL_MS, watchKeyChanges } from './key-cache.ts';
import { PlansRepo } from './plans-repo.ts';

/** Waits (well under the cache's time to live) until `check` holds. */
async function seenBeforeTheTtl(check: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + KEY_CACHE_TTL_MS / 2; !(await check()); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > deadline) assert.fail('the change was not seen before half the time to live: it came from expiry, not a notification');
  }
}

test(
  'a key revoked or a plan changed by another process takes effect on notification',
  { skip: testDatabaseKind() === 'pglite' && 'PGlite has one connection, in this process' },
  async () => {
    const { url, drop } = await createTestDatabaseUrl();
    const api = await openDatabase(url);
    const cli = await openDatabase(url);
    const stop = await watchKeyChanges(api);
    try {
      const accounts = new AccountsRepo(api.db);
      const account = await accounts.createAccount('acme', 'pro');
      const first = await accounts.createKey(account.id, 'main');
      const second = await accounts.createKey(account.id, 'main');
      assert.equal((await accounts.authenticate(second.key))?.account.plan.name, 'pro');

      await new AccountsRepo(cli.db).setPlan(account.id, 'free');
      await seenBeforeTheTtl(async () => (await accounts.authenticate(second.key))?.account.plan.name === 'free');
      await new PlansRepo(cli.db).update('free', { maxVcpus: 3 });
      await seenBeforeTheTtl(async () => (await accounts.authenticate(second.key))?.account.plan.maxVcpus === 3);

      assert.ok(await accounts.authenticate(first.key));
      await new AccountsRepo(cli.db).revokeKey(first.id, new Date());
      await seenBeforeTheTtl(async () => (await accounts.authenticate(first.key)) === null);
    } finally {
      await stop();
      await cli.close();
      await api.close();
      await drop();
    }
  },
);
