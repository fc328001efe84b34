// The poll cache's own rules, with a recording load double in place of the database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CommandRow, CommandWithOutputs } from './commands-repo.ts';
import { PollCache } from './poll-cache.ts';

const record = (id: string, accountId: string, status: string): CommandWithOutputs => ({
  row: { id, accountId, status } as CommandRow,
  files: [],
});

/** A load double: answers what `current` holds, counts calls, and can be held until released. */
function recordingLoad(initial: CommandWithOutputs | null) {
  const double = {
    current: initial,
    calls: 0,
    held: null as null | (() => void),
    hold() {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      double.held = release;
      return gate;
    },
    gate: Promise.resolve(),
    load: async () => {
      double.calls++;
      const answer = double.current;
      await double.gate;
      return answer;
    },
  };
  return double;
}

test('repeated reads of an unchanged command load it once', async () => {
  const cache = new PollCache();
  const db = recordingLoad(record('c1', 'A', 'PROCESSING'));
  for (let i = 0; i < 5; i++) assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'PROCESSING');
  assert.equal(db.calls, 1);
});

test("another account's command reads as not found, from the cache too", async () => {
  const cache = new PollCache();
  const db = recordingLoad(record('c1', 'A', 'QUEUED'));
  await cache.read('A', 'c1', db.load);
  assert.equal(await cache.read('B', 'c1', db.load), null);
  assert.equal(db.calls, 1);
});

test('unknown ids are not remembered: a command inserted later is found', async () => {
  const cache = new PollCache();
  const db = recordingLoad(null);
  assert.equal(await cache.read('A', 'c1', db.load), null);
  db.current = record('c1', 'A', 'QUEUED');
  assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'QUEUED');
});

test('a change notified after the read makes the next read load again', async () => {
  const cache = new PollCache();
  const db = recordingLoad(record('c1', 'A', 'PROCESSING'));
  await cache.read('A', 'c1', db.load);
  db.current = record('c1', 'A', 'SUCCESS');
  cache.changed('c1');
  assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'SUCCESS');
  assert.equal(db.calls, 2);
});

test('a change notified while a read runs: that read answers, but is not kept', async () => {
  const cache = new PollCache();
  const db = recordingLoad(record('c1', 'A', 'PROCESSING'));
  db.gate = db.hold();
  const first = cache.read('A', 'c1', db.load);
  await Promise.resolve();
  db.current = record('c1', 'A', 'SUCCESS');
  cache.changed('c1');
  // A read after the change does not join the read from before it.
  db.gate = Promise.resolve();
  assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'SUCCESS');
  db.held!();
  assert.equal((await first)?.row.status, 'PROCESSING');
  assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'SUCCESS');
  assert.equal(db.calls, 2, 'the stale answer did not overwrite the fresh entry');
});

test('concurrent reads of one id share one load', async () => {
  const cache = new PollCache();
  const db = recordingLoad(record('c1', 'A', 'QUEUED'));
  db.gate = db.hold();
  const reads = [cache.read('A', 'c1', db.load), cache.read('A', 'c1', db.load), cache.read('B', 'c1', db.load)];
  db.held!();
  const [a, b, stranger] = await Promise.all(reads);
  assert.equal(a?.row.id, 'c1');
  assert.equal(b?.row.id, 'c1');
  assert.equal(stranger, null);
  assert.equal(db.calls, 1);
});

test('clear (notifications may have been missed) forgets every entry and every running read', async () => {
  const cache = new PollCache();
  const db = recordingLoad(record('c1', 'A', 'QUEUED'));
  await cache.read('A', 'c1', db.load);
  db.gate = db.hold();
  const running = cache.read('A', 'c2', db.load);
  await Promise.resolve();
  cache.clear();
  db.held!();
  await running;
  assert.equal(cache.size, 0);
});

test('entries expire after the time to live, and the oldest goes when full', async () => {
  let now = 0;
  const cache = new PollCache({ ttlMs: 1000, maxEntries: 2, clock: () => now });
  const db = recordingLoad(record('c1', 'A', 'QUEUED'));
  await cache.read('A', 'c1', db.load);
  now = 1000;
  await cache.read('A', 'c1', db.load);
  assert.equal(db.calls, 2);
  await cache.read('A', 'c2', db.load);
  await cache.read('A', 'c3', db.load);
  assert.equal(cache.size, 2);
  await cache.read('A', 'c1', db.load);
  assert.equal(db.calls, 5, 'c1 was the oldest and went first');
});

test('a created command is kept: its first polls need no read', async () => {
  const cache = new PollCache();
  await cache.created('c1', async () => record('c1', 'A', 'QUEUED'));
  const db = recordingLoad(record('c1', 'A', 'PROCESSING'));
  assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'QUEUED');
  assert.equal(db.calls, 0);
  cache.changed('c1');
  assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'PROCESSING');
});

test('a change notified while the command is being created keeps it out of the cache', async () => {
  const cache = new PollCache();
  let stored!: () => void;
  const writing = cache.created(
    'c1',
    () => new Promise<CommandWithOutputs>((resolve) => (stored = () => resolve(record('c1', 'A', 'QUEUED')))),
  );
  cache.changed('c1'); // e.g. the reconciler started it before the insert's answer came back
  stored();
  await writing;
  const db = recordingLoad(record('c1', 'A', 'PROCESSING'));
  assert.equal((await cache.read('A', 'c1', db.load))?.row.status, 'PROCESSING');
  assert.equal(db.calls, 1);
});

/** A loadMany double over a table of records: records the ids of each call, and can be held. */
function recordingLoadMany(table: Map<string, CommandWithOutputs>) {
  const double = {
    calls: [] as string[][],
    gate: Promise.resolve(),
    loadMany: async (ids: string[]) => {
      double.calls.push(ids);
      const answer = new Map(ids.flatMap((id) => (table.has(id) ? [[id, table.get(id)!] as const] : [])));
      await double.gate;
      return answer;
    },
  };
  return double;
}

test('a page reads what is not in memory with one load, and keeps it for the next page and for polls', async () => {
  const cache = new PollCache();
  const table = new Map(['c1', 'c2', 'c3'].map((id) => [id, record(id, 'A', 'QUEUED')]));
  const db = recordingLoadMany(table);
  await cache.read('A', 'c2', recordingLoad(table.get('c2')!).load);
  const page = await cache.readMany('A', ['c1', 'c2', 'c3'], db.loadMany);
  assert.deepEqual(
    page.map((v) => v?.row.id),
    ['c1', 'c2', 'c3'],
  );
  assert.deepEqual(db.calls, [['c1', 'c3']]);
  await cache.readMany('A', ['c1', 'c2', 'c3'], db.loadMany);
  const poll = recordingLoad(null);
  assert.equal((await cache.read('A', 'c3', poll.load))?.row.id, 'c3');
  assert.equal(db.calls.length + poll.calls, 1, 'nothing loaded again');

  table.set('c1', record('c1', 'A', 'PROCESSING'));
  cache.changed('c1');
  assert.equal((await cache.readMany('A', ['c1', 'c2'], db.loadMany))[0]?.row.status, 'PROCESSING');
  assert.deepEqual(db.calls.at(-1), ['c1']);
});

test("a page leaves out another account's commands and gone ones as null", async () => {
  const cache = new PollCache();
  const db = recordingLoadMany(
    new Map([
      ['c1', record('c1', 'A', 'QUEUED')],
      ['c2', record('c2', 'B', 'QUEUED')],
    ]),
  );
  assert.deepEqual(
    (await cache.readMany('A', ['c1', 'c2', 'gone'], db.loadMany)).map((v) => v?.row.id ?? null),
    ['c1', null, null],
  );
});

test('a command changed while its page was read is not kept: the next read loads it again', async () => {
  const cache = new PollCache();
  const table = new Map([['c1', record('c1', 'A', 'QUEUED')]]);
  const db = recordingLoadMany(table);
  let release!: () => void;
  db.gate = new Promise<void>((r) => (release = r));
  const reading = cache.readMany('A', ['c1'], db.loadMany);
  cache.changed('c1'); // the batch may have read it before this change
  release();
  assert.equal((await reading)[0]?.row.status, 'QUEUED');
  db.gate = Promise.resolve();
  await cache.readMany('A', ['c1'], db.loadMany);
  assert.equal(db.calls.length, 2);
});
