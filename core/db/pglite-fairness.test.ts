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

test('queued queries let the event loop turn between them: a request is not kept waiting behind all of them', async () => {
  const client = await PGlite.create();
  try {
    takeTurnsWithRequests(client);
    const most = await mostQueriesPerTurn(client, 40);
    assert.ok(most <= 1, `${most} of 40 queries ran within one turn of the event loop`);
  } finally {
    await client.close();
  }
});

test('queries, exec and transactions keep their order and their results; a failure does not stop the queue', async () => {
  const client = await PGlite.create();
  try {
    takeTurnsWithRequests(client);
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
  } finally {
    await client.close();
  }
});
