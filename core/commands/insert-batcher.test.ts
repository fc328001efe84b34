// Which submits share a statement, and what each is answered when a statement fails, with the
// database's insertMany replaced by a double that records its calls and lets the test end them.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { InsertBatcher, MAX_BATCH } from './insert-batcher.ts';
import { QuotaUsedUp, type CommandRow, type NewCommandQuotas, type NewCommandRow } from './commands-repo.ts';

const quotasOf = (accountId: string): NewCommandQuotas => ({
  accountId,
  month: '2026-11-01',
  storageQuotaBytes: 1000,
  processingQuotaBytesPerMonth: 1000,
});
const ACME = quotasOf('acme');

function rowOf(accountId = 'acme', extra: Partial<NewCommandRow> = {}): NewCommandRow {
  return { id: randomUUID(), accountId, ffmpegCommand: '-i a b', ...extra } as NewCommandRow;
}

/** insertMany whose calls wait until the test ends them: `calls` shows which rows went together. */
class HeldInsertMany {
  readonly calls: { rows: NewCommandRow[]; end: (outcome?: Error | ((row: NewCommandRow) => Error | null)) => void }[] = [];
  readonly fn = (rows: NewCommandRow[]) =>
    new Promise<CommandRow[]>((resolve, reject) => {
      this.calls.push({
        rows,
        end: (outcome) => {
          if (outcome instanceof Error) return reject(outcome);
          const failing = outcome && rows.map(outcome).find((err) => err !== null);
          if (failing) return reject(failing);
          resolve(rows.map((row, i) => ({ ...row, seq: i }) as unknown as CommandRow));
        },
      });
    });
}

const turn = () => new Promise((r) => setImmediate(r));
/** After a statement ends: its answers, then a turn for those that waited to gather. */
const afterStatement = async () => {
  await turn();
  await turn();
};

test('submits of one turn of the event loop go together; those that come while they are in flight go after them, in order', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 60_000 }); // gathering is never cut short by a slow machine
  const turnMates = [rowOf(), rowOf()];
  const firstAnswers = turnMates.map((row) => batcher.insert(row, ACME));
  assert.equal(db.calls.length, 0, 'stored at the end of the turn');
  await turn();
  assert.equal(db.calls.length, 0, 'a turn in which a submit joined: one more turn to wait');
  await turn();
  assert.deepEqual(
    db.calls[0].rows.map((r) => r.id),
    turnMates.map((r) => r.id),
  );
  const later = [rowOf(), rowOf(), rowOf()];
  const answers = later.map((row) => batcher.insert(row, ACME));
  await turn();
  assert.equal(db.calls.length, 1, 'one statement at a time per account');
  db.calls[0].end();
  assert.equal((await firstAnswers[1]).id, turnMates[1].id);
  await afterStatement();
  assert.equal(db.calls.length, 2);
  assert.deepEqual(
    db.calls[1].rows.map((r) => r.id),
    later.map((r) => r.id),
  );
  db.calls[1].end();
  assert.deepEqual(
    (await Promise.all(answers)).map((r) => r.id),
    later.map((r) => r.id),
    'each is answered with its own row',
  );
});

test('accounts, quota limits and column sets each have their own statements, which run side by side', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 60_000 }); // gathering is never cut short by a slow machine
  void batcher.insert(rowOf('acme'), ACME);
  void batcher.insert(rowOf('other'), quotasOf('other'));
  void batcher.insert(rowOf('acme'), { ...ACME, storageQuotaBytes: 5 });
  void batcher.insert(rowOf('acme', { metadata: { a: 1 } }), ACME);
  await afterStatement();
  assert.equal(db.calls.length, 4, 'none waits for another lane');
  for (const call of db.calls) assert.equal(call.rows.length, 1);
  for (const call of db.calls) call.end();
});

test('more than MAX_BATCH waiting are stored in several statements', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 60_000 }); // gathering is never cut short by a slow machine
  const first = batcher.insert(rowOf(), ACME);
  await afterStatement();
  const all = [first, ...Array.from({ length: MAX_BATCH + 5 }, () => batcher.insert(rowOf(), ACME))];
  db.calls[0].end();
  await afterStatement();
  assert.equal(db.calls[1].rows.length, MAX_BATCH);
  db.calls[1].end();
  await afterStatement();
  assert.equal(db.calls[2].rows.length, 5);
  db.calls[2].end();
  assert.equal((await Promise.all(all)).length, MAX_BATCH + 6);
});

test('no room in the quotas refuses the whole batch, each with the same reading', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 60_000 }); // gathering is never cut short by a slow machine
  void batcher.insert(rowOf(), ACME).catch(() => {});
  await afterStatement();
  const refused = [batcher.insert(rowOf(), ACME), batcher.insert(rowOf(), ACME)];
  db.calls[0].end();
  await afterStatement();
  const full = new QuotaUsedUp({ processingRoom: false, storageRoom: true, usage: { storedBytes: 1, processedBytes: 2000 } });
  db.calls[1].end(full);
  for (const answer of refused) await assert.rejects(answer, (err) => err === full);
  assert.equal(db.calls.length, 2, 'not tried again one by one');
});

test('any other failure of a batch tries each row alone: only the one at fault fails', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 60_000 }); // gathering is never cut short by a slow machine
  void batcher.insert(rowOf(), ACME);
  await afterStatement();
  const bad = rowOf();
  const rows = [rowOf(), bad, rowOf()];
  const answers = rows.map((row) => batcher.insert(row, ACME));
  db.calls[0].end();
  await afterStatement();
  const badOne = (row: NewCommandRow) => (row.id === bad.id ? new Error(`duplicate key ${row.id}`) : null);
  db.calls[1].end(badOne);
  await afterStatement();
  assert.deepEqual(
    db.calls.slice(2).map((c) => c.rows.length),
    [1, 1, 1],
  );
  for (const call of db.calls.slice(2)) call.end(badOne);
  assert.equal((await answers[0]).id, rows[0].id);
  await assert.rejects(answers[1], /duplicate key/);
  assert.equal((await answers[2]).id, rows[2].id);
});

test('after a lane empties, the next submit is again stored at the end of its turn', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 60_000 }); // gathering is never cut short by a slow machine
  const first = batcher.insert(rowOf(), ACME);
  await afterStatement();
  db.calls[0].end();
  await first;
  await afterStatement();
  void batcher.insert(rowOf(), ACME);
  await turn();
  assert.equal(db.calls.length, 2);
  db.calls[1].end();
});

/**
 * Inserts a row at each turn of the event loop, as checked bodies reach the store in the service (one
 * per turn, event-loop-turns.ts, ahead of the batcher's own turn), while `more()` says so.
 */
function arrivingTurnAfterTurn(batcher: InsertBatcher, more: (count: number) => boolean): Promise<number> {
  return new Promise((done) => {
    let count = 0;
    const next = () =>
      setImmediate(() => {
        if (!more(count)) return done(count);
        next(); // the next turn is taken before this one's body reaches the store, as event-loop-turns.ts does
        void batcher.insert(rowOf(), ACME);
        count++;
      });
    next();
  });
}

test('a batch waits while submits keep joining it turn after turn, and goes after a turn with none', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 60_000 }); // gathering is never cut short by a slow machine
  await arrivingTurnAfterTurn(batcher, (count) => count < 5);
  assert.equal(db.calls.length, 0, 'still gathering');
  await afterStatement();
  await turn();
  assert.equal(db.calls.length, 1);
  assert.equal(db.calls[0].rows.length, 5);
  db.calls[0].end();
});

test('a batch stops gathering once it has waited maxGatherMs, though submits still join it', async () => {
  const db = new HeldInsertMany();
  const batcher = new InsertBatcher(db.fn, { maxGatherMs: 0 });
  void batcher.insert(rowOf(), ACME);
  void batcher.insert(rowOf(), ACME); // joined in the same turn: it would wait a turn more
  await afterStatement();
  assert.equal(db.calls.length, 1);
  assert.equal(db.calls[0].rows.length, 2);
  db.calls[0].end();
});
