// Waiters are let through one per event-loop turn, in arrival order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventLoopTurns } from './event-loop-turns.ts';

/** Counts event-loop turns: an immediate that queues itself runs once per turn. */
function turnCounter() {
  const counter = { turn: 0, running: true };
  const tick = () => {
    counter.turn++;
    if (counter.running) setImmediate(tick);
  };
  setImmediate(tick);
  return counter;
}

test('waiters go through in arrival order, each in an event-loop turn of its own', async () => {
  const turns = new EventLoopTurns();
  const counter = turnCounter();
  const seen: [string, number][] = [];
  await Promise.all(['a', 'b', 'c', 'd'].map((name) => turns.take().then(() => seen.push([name, counter.turn]))));
  counter.running = false;
  assert.deepEqual(
    seen.map(([name]) => name),
    ['a', 'b', 'c', 'd'],
  );
  const turnsSeen = seen.map(([, turn]) => turn);
  assert.equal(new Set(turnsSeen).size, 4, `one waiter per turn, got turns ${turnsSeen.join(', ')}`);
});

test('a waiter that comes later, with nobody waiting, goes through at the next turn', async () => {
  const turns = new EventLoopTurns();
  await turns.take();
  const counter = turnCounter();
  await turns.take();
  counter.running = false;
  assert.ok(counter.turn <= 1, `let through after ${counter.turn} turns`);
});
