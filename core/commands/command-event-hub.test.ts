import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommandEventHub } from './command-event-hub.ts';
import type { CommandWithOutputs } from './commands-repo.ts';

const value = (status: string) => ({ row: { id: 'c1', accountId: 'a1', status }, files: [] }) as unknown as CommandWithOutputs;
const settle = () => new Promise((r) => setImmediate(r));

test('one read per change, whatever the number of listeners; none for a command nobody watches', async () => {
  let reads = 0;
  const hub = new CommandEventHub({ read: async () => (reads++, value('PROCESSING')) });
  const got: string[][] = [[], [], []];
  const stops = got.map((into) => hub.subscribe('a1', 'c1', (v) => into.push(v!.row.status)));
  hub.changed('c1');
  hub.changed('other');
  await settle();
  assert.equal(reads, 1);
  assert.deepEqual(got, [['PROCESSING'], ['PROCESSING'], ['PROCESSING']]);
  for (const stop of stops) stop();
  hub.changed('c1');
  await settle();
  assert.equal(reads, 1, 'no listener, no read');
  assert.equal(hub.watched, 0);
});

test('changes during a read make one more read after it, not one each', async () => {
  const pending: ((v: CommandWithOutputs) => void)[] = [];
  const hub = new CommandEventHub({ read: () => new Promise((r) => pending.push(r)) });
  const got: string[] = [];
  hub.subscribe('a1', 'c1', (v) => got.push(v!.row.status));
  hub.changed('c1');
  hub.changed('c1');
  hub.changed('c1');
  assert.equal(pending.length, 1);
  pending[0](value('QUEUED'));
  await settle();
  assert.equal(pending.length, 2, 'one read again for the changes it may have missed');
  pending[1](value('PROCESSING'));
  await settle();
  assert.deepEqual(got, ['QUEUED', 'PROCESSING']);
  assert.equal(pending.length, 2);
});

test('the read is scoped to the account of the listeners; a failed read is tried again', async () => {
  const asked: string[] = [];
  let fail = true;
  const errors: unknown[] = [];
  const hub = new CommandEventHub({
    read: async (accountId, id) => {
      asked.push(`${accountId}/${id}`);
      if (fail) throw new Error('database away');
      return value('SUCCESS');
    },
    onReadError: (err) => errors.push(err),
    retryMs: 10,
  });
  const got: string[] = [];
  hub.subscribe('a1', 'c1', (v) => got.push(v!.row.status));
  hub.changed('c1');
  await settle();
  // On a busy machine the 10 ms retry may already have failed again: at least one error.
  assert.ok(errors.length >= 1);
  fail = false;
  for (const deadline = Date.now() + 5_000; got.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(got, ['SUCCESS']);
  assert.ok(asked.length >= 2, 'read again after the failure');
  assert.ok(asked.every((a) => a === 'a1/c1'));
});

test('resync reads every watched command again', async () => {
  const asked: string[] = [];
  const hub = new CommandEventHub({ read: async (_a, id) => (asked.push(id), value('QUEUED')) });
  hub.subscribe('a1', 'c1', () => {});
  hub.subscribe('a1', 'c2', () => {});
  hub.resync();
  await settle();
  assert.deepEqual(asked.sort(), ['c1', 'c2']);
});
