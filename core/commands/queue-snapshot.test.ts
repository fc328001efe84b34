import assert from 'node:assert/strict';
import { test } from 'node:test';
import { estimatedStartSeconds, MIN_RATE_SPAN_MS, QueueSnapshot, RECENT_STARTS_WINDOW_MS, type QueueState } from './queue-snapshot.ts';

const now = Date.UTC(2026, 0, 1, 12);

test('the estimate: (position + 1) starts at the recent rate', () => {
  // 30 starts over the last 10 minutes: one every 20 s.
  const state = { recentStarts: 30, firstRecentStart: new Date(now - 600_000) };
  assert.equal(estimatedStartSeconds(0, state, now), 20);
  assert.equal(estimatedStartSeconds(2, state, now), 60);
});

test('the estimate: no recent start, no estimate', () => {
  assert.equal(estimatedStartSeconds(0, { recentStarts: 0, firstRecentStart: null }, now), null);
});

test('the estimate: a burst of starts is spread over at least a minute, and the span is at most the window', () => {
  const burst = { recentStarts: 6, firstRecentStart: new Date(now - 1_000) };
  assert.equal(estimatedStartSeconds(0, burst, now), MIN_RATE_SPAN_MS / 1000 / 6);
  const old = { recentStarts: 9, firstRecentStart: new Date(now - 2 * RECENT_STARTS_WINDOW_MS) };
  assert.equal(estimatedStartSeconds(0, old, now), RECENT_STARTS_WINDOW_MS / 1000 / 9);
});

test('the snapshot: positions in the order read, one read per refresh interval, none for commands not QUEUED', async () => {
  let clock = now;
  const state: QueueState = { order: ['a', 'b', 'c'], recentStarts: 0, firstRecentStart: null };
  const reads: Date[] = [];
  const snapshot = new QueueSnapshot({
    load: async (since) => {
      reads.push(since);
      return { ...state, order: [...state.order] };
    },
    refreshMs: 2_000,
    clock: () => clock,
  });
  assert.deepEqual(await snapshot.view({ id: 'x', status: 'PROCESSING' }), { queuePosition: null, estimatedStartSeconds: null });
  assert.equal(reads.length, 0, 'no read for a command that is not QUEUED');
  const views = await Promise.all(['a', 'b', 'c'].map((id) => snapshot.view({ id, status: 'QUEUED' })));
  assert.deepEqual(
    views.map((v) => v.queuePosition),
    [0, 1, 2],
  );
  assert.equal(reads.length, 1, 'concurrent asks share one read');
  assert.equal(reads[0].getTime(), now - RECENT_STARTS_WINDOW_MS);
  state.order = ['b', 'c'];
  state.recentStarts = 1;
  state.firstRecentStart = new Date(now);
  clock += 1_999;
  assert.equal((await snapshot.view({ id: 'b', status: 'QUEUED' })).queuePosition, 1, 'within the interval: the snapshot');
  assert.equal(reads.length, 1);
  clock += 1;
  assert.deepEqual(await snapshot.view({ id: 'b', status: 'QUEUED' }), { queuePosition: 0, estimatedStartSeconds: 60 });
  assert.equal(reads.length, 2);
  assert.deepEqual(await snapshot.view({ id: 'z', status: 'QUEUED' }), { queuePosition: null, estimatedStartSeconds: null }, 'not seen');
});
