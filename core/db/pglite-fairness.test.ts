import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { takeTurnsWithRequests } from './pglite-fairness.ts';

/** Queues `count` queries at once, then counts how many have ended when a timer set meanwhile fires. */
async function queriesBeforeTimer(client: PGlite, count: number): Promise<number> {
  let ended = 0;
  const queries = Array.from({ length: count }, () => client.query('select count(*) from generate_series(1, 20000)').then(() => ended++));
  const seenByTimer = new Promise<number>((resolve) => setTimeout(() => resolve(ended), 0));
  await Promise.all(queries);
  return seenByTimer;
}

test('queued queries let the event loop turn between them: a timer (a request) is not kept waiting behind all', async () => {
  const client = await PGlite.create();
  try {
    takeTurnsWithRequests(client);
    const ended = await queriesBeforeTimer(client, 40);
    assert.ok(ended <= 3, `${ended} of 40 queries ran before the timer`);
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
