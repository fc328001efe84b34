// The plan's rules as the database decides them: each Limit's SQL agrees with the code on the same
// numbers, at the limit and on either side of it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../db/migrate.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { Limit, newCommandRoomSql } from './plan-rules.ts';

test('a Limit decides in SQL as in the code', async () => {
  const database = await openTestDatabase();
  try {
    for (const [name, limit] of [
      ['atMost', Limit.atMost],
      ['below', Limit.below],
    ] as const) {
      for (const amount of [3, 4, 5]) {
        const [row] = rowsOf<{ allowed: boolean }>(
          await database.db.execute(sql`select ${limit.allowsSql(sql`${amount}::float8 + 0`, sql`${4}::int`)} as allowed`),
        );
        assert.equal(row.allowed, limit.allows(amount, 4), `${name} ${amount}`);
      }
    }
  } finally {
    await database.close();
  }
});

test("a new command's quota columns: room while processed and stored are below their quotas", async () => {
  const database = await openTestDatabase();
  try {
    const limits = { storageQuotaBytes: 1000, processingQuotaBytesPerMonth: 5000 };
    const room = async (stored: number, processed: number) => {
      const [row] = rowsOf<{ processing_room: boolean; storage_room: boolean }>(
        await database.db.execute(
          sql`select ${newCommandRoomSql(limits)} from (select ${stored}::float8 as stored, ${processed}::float8 as processed) usage`,
        ),
      );
      return [row.processing_room, row.storage_room];
    };
    assert.deepEqual(await room(999, 4999), [true, true]);
    assert.deepEqual(await room(1000, 4999), [true, false]);
    assert.deepEqual(await room(999, 5000), [false, true]);
  } finally {
    await database.close();
  }
});
