import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { SerialPasses } from './serial-passes.ts';
import { DatabaseHealth } from '../db/database-health.ts';
import { SerialSection } from './serial-section.ts';

const silent = pino({ level: 'silent' });

test('kicks during a pass make exactly one more pass, never two at once', async () => {
  let running = 0;
  let maxRunning = 0;
  let passes = 0;
  let release: () => void = () => {};
  const passes$ = new SerialPasses(
    async () => {
      passes++;
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise<void>((r) => (release = r));
      running--;
    },
    silent,
    'test',
  );
  passes$.kick();
  for (let i = 0; i < 10; i++) passes$.kick();
  release(); // the first pass ends; the one more starts
  await new Promise((r) => setImmediate(r));
  release();
  await passes$.stop();
  assert.equal(passes, 2);
  assert.equal(maxRunning, 1);
});

test('a failed pass is logged and the next kick runs again; after stop nothing runs', async () => {
  const errors: string[] = [];
  const logger = { error: (_o: unknown, msg: string) => errors.push(msg) } as unknown as pino.Logger;
  let passes = 0;
  const p = new SerialPasses(
    async () => {
      passes++;
      throw new Error('boom');
    },
    logger,
    'test',
  );
  p.kick();
  await new Promise((r) => setImmediate(r));
  p.kick();
  await p.stop();
  p.kick();
  assert.equal(passes, 2);
  assert.deepEqual(errors, ['test pass failed; the next pass retries', 'test pass failed; the next pass retries']);
});

test('while the database is down kicks make no pass and its failures no log line; one pass follows when it is back', async () => {
  const errors: string[] = [];
  const logger = { error: (_o: unknown, msg: string) => errors.push(msg) } as unknown as pino.Logger;
  let reachable = true;
  const health = new DatabaseHealth({
    check: async () => {
      if (!reachable) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', query: 'select 1' });
    },
  });
  let passes = 0;
  const p = new SerialPasses(
    async () => {
      passes++;
      if (!reachable) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', query: 'select' });
    },
    logger,
    'test',
    { health },
  );
  reachable = false;
  p.kick(); // fails for want of the database: marks it down
  await new Promise((r) => setImmediate(r));
  assert.equal(health.up, false);
  for (let i = 0; i < 10; i++) p.kick();
  await new Promise((r) => setImmediate(r));
  assert.equal(passes, 1, 'no pass while it is down');
  reachable = true;
  await health.checkNow();
  await new Promise((r) => setImmediate(r));
  await p.stop();
  assert.equal(passes, 2, 'one pass once it is back');
  assert.deepEqual(errors, []);
});

test('in a shared section a pass waits for its turn, and kicks while it waits are merged into it', async () => {
  const section = new SerialSection();
  let release: () => void = () => {};
  const other = section.run(() => new Promise<void>((r) => (release = r)));
  let passes = 0;
  let releasePass: () => void = () => {};
  const p = new SerialPasses(
    async () => {
      passes++;
      await new Promise<void>((r) => (releasePass = r));
    },
    silent,
    'test',
    { section },
  );
  for (let i = 0; i < 10; i++) p.kick(); // all before the pass has its turn: one pass
  await new Promise((r) => setImmediate(r));
  assert.equal(passes, 0, 'the other work holds the section');
  release();
  await other;
  await new Promise((r) => setImmediate(r));
  assert.equal(passes, 1);
  p.kick(); // during the pass: one more after it
  p.kick();
  releasePass();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(passes, 2);
  releasePass();
  await p.stop();
  assert.equal(passes, 2);
});
