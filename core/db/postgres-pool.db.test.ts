import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { openDatabase } from './database.ts';
import { mainPoolSize } from './postgres-pool.ts';
import { createTestDatabaseUrl, testDatabaseKind } from './testing/test-database.ts';

/** The most statements of `url`'s main pool seen running at once while 12 sleep, each for 300 ms. */
async function mostAtOnce(url: string, databaseName: string): Promise<number> {
  const database = await openDatabase(url);
  const watcher = postgres(process.env.FFOP_TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
  try {
    const sleeping = Promise.all(Array.from({ length: 12 }, () => database.db.execute(sql`select pg_sleep(0.3) as pool_test`)));
    let done = false;
    const end = () => (done = true);
    void sleeping.then(end, end);
    // Sampled until the last one ends (not a fixed number of times): connections open late on a busy machine.
    let most = 0;
    while (!done) {
      await new Promise((r) => setTimeout(r, 50));
      const [{ n }] = await watcher<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where datname = ${databaseName} and query like '%pool_test%' and state = 'active'`;
      most = Math.max(most, n);
    }
    await sleeping;
    return most;
  } finally {
    await watcher.end();
    await database.close();
  }
}

test(
  'the main pool opens the connections mainPoolSize gives, and max in the URL sets them',
  { skip: testDatabaseKind() === 'pglite' && 'PGlite has one connection, in this process' },
  async () => {
    const { url, drop } = await createTestDatabaseUrl();
    const databaseName = new URL(url).pathname.slice(1);
    try {
      assert.equal(await mostAtOnce(url, databaseName), mainPoolSize(url, availableParallelism()));
      assert.equal(await mostAtOnce(`${url}?max=3`, databaseName), 3);
    } finally {
      await drop();
    }
  },
);
