import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { takeTurnsWithRequests } from './pglite-fairness.ts';

/**
 * Queues `count` queries at once; returns the most that ended between two turns of the event loop
 * (seen by a callback that re-arms itself each turn, as a request being read would be).
 */
async function mostQueriesPerTurn(client: PGlite, count: number): Promise<number> {
  let ended = 0;
  let seen = 0;
  let most = 0;
  let done = false;
  const look = () => {
    most = Math.max(most, ended - seen);
    seen = ended;
    if (!done) setImmediate(look);
  };
  const queries = Array.from({ length: count }, () => client.query('select count(*) from generate_series(1, 2000)').then(() => ended++));
  setImmediate(look);
  await Promise.all(queries);
  done = true;
  look();
  return most;
}

/** A fresh in-memory PGlite with its queries queued; `ahead` is the client whose queries go first. */
async function withQueuedClient(body: (client: PGlite, ahead: PGlite) => Promise<void>): Promise<void> {
  const client = await PGlite.create();
  try {
    await body(client, takeTurnsWithRequests(client));
  } finally {
    await client.close();
  }
}

test('queued queries let the event loop turn between them: a request is not kept waiting behind all of them', () =>
  withQueuedClient(async (client) => {
    const most = await mostQueriesPerTurn(client, 40);
    assert.ok(most <= 1, `${most} of 40 queries ran within one turn of the event loop`);
  }));

test('queries, exec and transactions keep their order and their results; a failure does not stop the queue', () =>
  withQueuedClient(async (client) => {
    await client.exec('create table t (n int)');
    const order: string[] = [];
    await Promise.all([
      client.query('insert into t values (1)').then(() => order.push('insert 1')),
      client.query('select * from missing_table').catch(() => order.push('failed')),
      client
        .transaction(async (tx) => {
          await tx.query('insert into t values (2)');
          await tx.query('insert into t values (3)');
        })
        .then(() => order.push('transaction')),
      client.query<{ n: number }>('select n from t order by n').then((r) => order.push(`read ${r.rows.map((x) => x.n).join(',')}`)),
    ]);
    assert.deepEqual(order, ['insert 1', 'failed', 'transaction', 'read 1,2,3']);
  }));

test('the client it returns goes ahead of the queries waiting, on the same database', () =>
  withQueuedClient(async (client, ahead) => {
    await client.exec('create table t (n int)');
    const order: string[] = [];
    const inserts = Array.from({ length: 20 }, (_, i) => client.query(`insert into t values (${i})`).then(() => order.push(`insert ${i}`)));
    const read = ahead.query<{ n: number }>('select count(*)::int as n from t').then((r) => (order.push('read'), r.rows[0].n));
    const seen = await read;
    await Promise.all(inserts);
    assert.ok(order.indexOf('read') <= 1, order.join(', '));
    assert.equal(seen, order.indexOf('read'), 'it read what the inserts before it wrote');
    assert.equal((await ahead.query<{ n: number }>('select count(*)::int as n from t')).rows[0].n, 20);
  }));

test('it never goes twice in a row while other queries wait: a flood of it leaves the others half the turns', () =>
  withQueuedClient(async (client, ahead) => {
    const order: string[] = [];
    const queries = Array.from({ length: 6 }, () => [
      client.query('select 1').then(() => order.push('other')),
      ahead.query('select 1').then(() => order.push('ahead')),
      ahead.query('select 1').then(() => order.push('ahead')),
    ]).flat();
    await Promise.all(queries);
    // The first other query was running when the rest came; then they alternate until the others are done.
    assert.deepEqual(order.slice(0, 12), Array(6).fill(['other', 'ahead']).flat());
    assert.deepEqual(order.slice(12), Array(6).fill('ahead'));
  }));
