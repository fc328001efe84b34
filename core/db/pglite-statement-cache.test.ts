import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { bigint, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { cacheStatements, createStatementCache } from './pglite-statement-cache.ts';
import { readTypesAsText } from './pglite-text-types.ts';

/** An in-memory database with a table of a few types and two rows, closed after the test. */
async function fixture(t: TestContext) {
  const client = await PGlite.create();
  t.after(() => client.close());
  await client.exec(`create table things (name text primary key, at timestamptz, big int8, doc jsonb, tags text[], ok boolean);
    insert into things values ('a', '2026-11-27 10:00+00', 9007199254740991, '{"x": [1, "y"]}', '{p,q}', true),
                              ('b', null, -1, null, '{}', false);`);
  return client;
}

/** The texts of the statements kept right now and how often each has run: PostgreSQL's own account. */
async function preparedRuns(client: PGlite): Promise<Record<string, number>> {
  const { rows } = await client.query<{ statement: string; runs: number }>(
    `select statement, (generic_plans + custom_plans)::int as runs from pg_prepared_statements order by statement`,
  );
  return Object.fromEntries(rows.map((r) => [r.statement, r.runs]));
}

const CASES: [string, unknown[], { rowMode?: 'array' | 'object' }?][] = [
  ['select * from things order by name', []],
  ['select * from things where name = $1', ['a'], { rowMode: 'array' }],
  ['select name from things where at < $1 and big > $2 and ok = $3', [new Date('2027-01-01T00:00:00Z'), 5, true]],
  ['select $1::jsonb as doc, $2::text[] as tags, $3::int as nothing', [{ k: [1, null, 'v'] }, ['a', 'b c'], null]],
  ['select * from things where name = $1', ['none']],
  ['insert into things (name, big) values ($1, $2) on conflict (name) do update set big = things.big + 1 returning name, big', ['c', 42n]],
  ['update things set big = big + 1 where name = any($1)', [['a', 'b']]],
  ['delete from things where name = $1', ['c']],
];

test('each statement answers what PGlite query() answers, rows, types and counts', async (t) => {
  const [own, cached] = await Promise.all([fixture(t), fixture(t)]);
  const cache = createStatementCache(cached);
  for (const [text, params, options] of CASES) {
    for (let run = 0; run < 2; run++) {
      assert.deepEqual(await cache.query(text, params, options, false), await own.query(text, params, options), `${text} (run ${run + 1})`);
    }
  }
});

test('a text is prepared once and then only bound and run', async (t) => {
  const client = await fixture(t);
  const cache = createStatementCache(client);
  for (let i = 0; i < 3; i++) await cache.query('select big from things where name = $1', ['a'], undefined, false);
  await cache.query('select count(*) from things', [], undefined, false);
  assert.equal(cache.size, 2);
  assert.deepEqual(await preparedRuns(client), { 'select big from things where name = $1': 3, 'select count(*) from things': 1 });
});

test('a failed statement rejects as PGlite query() does and stays usable; a text that cannot be prepared is not kept', async (t) => {
  const client = await fixture(t);
  const cache = createStatementCache(client);
  const insert = 'insert into things (name) values ($1)';
  await assert.rejects(
    cache.query(insert, ['a'], undefined, false),
    (err: Error & { code?: string; query?: string; params?: unknown[] }) => {
      assert.equal(err.code, '23505');
      assert.equal(err.query, insert);
      assert.deepEqual(err.params, ['a']);
      return true;
    },
  );
  assert.equal((await cache.query(insert, ['d'], undefined, false)).affectedRows, 1);
  await assert.rejects(cache.query('selec 1', [], undefined, false), { code: '42601' });
  assert.equal(cache.size, 1);
});

test('over the limit the oldest statement is closed, and runs again when asked for', async (t) => {
  const client = await fixture(t);
  const cache = createStatementCache(client, 2);
  for (const n of [1, 2, 3, 1]) assert.deepEqual((await cache.query(`select ${n} as n`, [], undefined, false)).rows, [{ n }]);
  assert.equal(cache.size, 2);
  assert.deepEqual(await preparedRuns(client), { 'select 1 as n': 1, 'select 3 as n': 1 });
});

test('a table changed under a kept statement: outside a transaction it is prepared again and answers the new columns', async (t) => {
  const client = await fixture(t);
  const cache = createStatementCache(client);
  await cache.query('select * from things where name = $1', ['a'], undefined, false);
  await client.exec('alter table things add column extra int default 7');
  const { rows } = await cache.query<{ extra: number }>('select * from things where name = $1', ['a'], undefined, false);
  assert.equal(rows[0].extra, 7);
});

test('through client.query and transactions: commits, rollbacks and savepoints as before, with prepared statements', async (t) => {
  const client = await fixture(t);
  cacheStatements(client);
  readTypesAsText(client);
  const things = pgTable('things', {
    name: text('name').primaryKey(),
    at: timestamp('at', { withTimezone: true }),
    big: bigint('big', { mode: 'number' }),
    doc: jsonb('doc'),
  });
  const db = drizzle(client);
  await db.transaction(async (tx) => {
    await tx.insert(things).values({ name: 'kept', big: 1, at: new Date('2026-11-28T00:00:00Z'), doc: { a: 1 } });
    await tx
      .transaction(async (inner) => {
        await inner.insert(things).values({ name: 'undone', big: 2 });
        throw new Error('roll the savepoint back');
      })
      .catch(() => {});
  });
  await db
    .transaction(async (tx) => {
      await tx.update(things).set({ big: 100 }).where(eq(things.name, 'kept'));
      throw new Error('roll it all back');
    })
    .catch(() => {});
  const rows = await db
    .select()
    .from(things)
    .where(sql`${things.name} in ('kept', 'undone')`);
  assert.deepEqual(rows, [{ name: 'kept', big: 1, at: new Date('2026-11-28T00:00:00Z'), doc: { a: 1 } }]);
  const runs = await preparedRuns(client);
  assert.ok(Object.keys(runs).length >= 3, `statements inside transactions are prepared too: ${JSON.stringify(runs)}`);
});
