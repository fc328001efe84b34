import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { date, interval, jsonb, numeric, pgTable, bigint, text, timestamp } from 'drizzle-orm/pg-core';
import { readTypesAsText, TEXT_TYPES } from './pglite-text-types.ts';

const things = pgTable('things', {
  name: text('name').primaryKey(),
  at: timestamp('at', { withTimezone: true }).notNull(),
  localAt: timestamp('local_at').notNull(),
  day: date('day', { mode: 'date' }).notNull(),
  wait: interval('wait').notNull(),
  amount: numeric('amount').notNull(),
  big: bigint('big', { mode: 'number' }).notNull(),
  doc: jsonb('doc').notNull(),
});

/** A column of every type drizzle reads as text, and some it does not, as a raw statement returns them. */
const EVERY_TYPE = sql`select '2026-11-27 10:00+00'::timestamptz as tz, '2026-11-27 10:00:01.5'::timestamp as ts,
  '2026-11-27'::date as d, '1 day 02:03:04'::interval as i, array[1.5, 2]::numeric[] as na,
  array['2026-11-27 10:00'::timestamp] as tsa, array['2026-11-27 10:00+00'::timestamptz] as tza,
  array['1 hour'::interval] as ia, array['2026-11-27'::date] as da,
  12345678901::int8 as big, '{"a": [1, "x"]}'::jsonb as doc, 1.25::float8 as f, true as b`;

/** An in-memory database with the table, and the options each query reached PGlite with (recorded beneath readTypesAsText). */
async function fixture(textTypes: boolean) {
  const client = await PGlite.create();
  const options: (Record<string, unknown> | undefined)[] = [];
  const query = client.query.bind(client);
  client.query = ((text: string, params?: unknown[], o?: Record<string, unknown>) => {
    options.push(o);
    return query(text, params, o);
  }) as PGlite['query'];
  if (textTypes) readTypesAsText(client);
  const db = drizzle(client);
  await db.execute(sql`create table things (name text primary key, at timestamptz not null, local_at timestamp not null,
    day date not null, wait interval not null, amount numeric not null, big int8 not null, doc jsonb not null)`);
  await db.insert(things).values({
    name: 'a',
    at: new Date('2026-11-27T10:00:00.123Z'),
    localAt: new Date('2026-11-27T11:00:00Z'),
    day: new Date('2026-11-27'),
    wait: '2 hours',
    amount: '12.50',
    big: 9007199254740991,
    doc: { list: [1, 'two', null] },
  });
  return { client, db, options };
}

test('drizzle gives every PGlite query parsers for TEXT_TYPES only, each reading the text as it is', async () => {
  const { client, db, options } = await fixture(false);
  try {
    await db.select().from(things);
    await db.execute(sql`select 1`);
    const given = options.filter((o) => o?.parsers !== undefined);
    assert.equal(given.length, options.length, 'every drizzle query passes parsers');
    for (const o of given) {
      const parsers = o!.parsers as Record<string, (value: string, type: number) => unknown>;
      assert.deepEqual(Object.keys(parsers).map(Number).sort(), [...TEXT_TYPES].sort());
      for (const [oid, parse] of Object.entries(parsers)) assert.equal(parse('some text', Number(oid)), 'some text');
    }
  } finally {
    await client.close();
  }
});

test('with the types read as text, drizzle queries reach PGlite without per-query parsers', async () => {
  const { client, db, options } = await fixture(true);
  try {
    options.length = 0;
    await db.select().from(things);
    await db.execute(EVERY_TYPE);
    assert.equal(options.length, 2);
    for (const o of options) {
      assert.equal(o?.parsers, undefined);
      assert.ok(o?.rowMode, 'the other options still go through');
    }
  } finally {
    await client.close();
  }
});

test('a query with parsers for other types keeps them', async () => {
  const { client, options } = await fixture(true);
  try {
    options.length = 0;
    const parsers = { [TEXT_TYPES[0]]: (v: string) => v, 20: (v: string) => `big ${v}` };
    const { rows } = await client.query<{ n: string }>('select 7::int8 as n', [], { parsers });
    assert.equal(rows[0].n, 'big 7');
    assert.equal(options[0]?.parsers, parsers);
  } finally {
    await client.close();
  }
});

test('rows read through drizzle are the same as without reading the types as text', async () => {
  const plain = await fixture(false);
  const withText = await fixture(true);
  try {
    const [a, b] = await Promise.all([plain.db.select().from(things), withText.db.select().from(things)]);
    assert.deepEqual(b, a);
    assert.ok(b[0].at instanceof Date && b[0].day instanceof Date, 'columns map the text to dates');
    const [rawA, rawB] = await Promise.all([plain.db.execute(EVERY_TYPE), withText.db.execute(EVERY_TYPE)]);
    assert.deepEqual(rawB.rows, rawA.rows);
    assert.equal(typeof rawB.rows[0].tz, 'string');
    assert.deepEqual(rawB.rows[0].doc, { a: [1, 'x'] }, 'other types keep their parsers');
  } finally {
    await Promise.all([plain.client.close(), withText.client.close()]);
  }
});
