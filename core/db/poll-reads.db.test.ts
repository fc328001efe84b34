// Database.pollReads on each driver: a read someone waits on does not queue behind the writes that
// were waiting before it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from './migrate.ts';
import { openTestDatabase, testDatabaseKind } from './testing/test-database.ts';

const settled = (p: Promise<unknown>) => Promise.race([p.then(() => true), new Promise((r) => setImmediate(() => r(false)))]);

// The timeout catches a read stuck behind the others for good; opening a database on a busy machine takes tens of seconds.
test('a poll read goes ahead of the statements already waiting', { timeout: 120_000 }, async () => {
  const database = await openTestDatabase();
  try {
    await database.db.execute(sql`create table t (n int)`);
    if (testDatabaseKind() === 'pglite') {
      // One thread, one queue: the read is the next to run after the statement running when it came.
      const order: string[] = [];
      const writes = Array.from({ length: 20 }, (_, i) =>
        database.db.execute(sql`insert into t select ${i} from generate_series(1, 200)`).then(() => order.push(`write ${i}`)),
      );
      const read = database.pollReads.execute(sql`select count(*) from t`).then(() => order.push('read'));
      await Promise.all([...writes, read]);
      assert.ok(order.indexOf('read') <= 1, order.join(', '));
    } else {
      // Every connection of the main pool waits for a lock another session holds; the read answers anyway.
      const holder = await database.db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(42)`);
        // (then: drizzle sends a query only once it is awaited.)
        const blocked = Array.from({ length: 12 }, () => database.db.execute(sql`select pg_advisory_lock_shared(42)`).then(() => true));
        await new Promise((r) => setTimeout(r, 200));
        const read = await database.pollReads.execute(sql`select count(*)::int as n from t`);
        assert.equal(rowsOf<{ n: number }>(read)[0].n, 0);
        assert.equal(await settled(blocked[11]), false, 'the main pool is still busy');
        return blocked;
      });
      await Promise.all(holder);
    }
  } finally {
    await database.close();
  }
});
