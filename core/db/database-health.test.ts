import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from 'pino';
import { DatabaseHealth } from './database-health.ts';
import { DatabaseUnavailable } from './unavailable.ts';

function recordingLogger() {
  const lines: string[] = [];
  const logger = { warn: (_o: unknown, m: string) => lines.push(`warn ${m}`), info: (_o: unknown, m: string) => lines.push(`info ${m}`) };
  return { lines, logger: logger as unknown as Logger };
}

test('a failing check marks the database down with one warning however often it fails; a passing one marks it up and tells', async () => {
  let answer: () => Promise<unknown> = async () => 1;
  const { lines, logger } = recordingLogger();
  const health = new DatabaseHealth({ check: () => answer(), logger });
  let ups = 0;
  health.whenUp(() => ups++);
  await health.checkNow();
  assert.equal(health.up, true);
  answer = async () => {
    throw new DatabaseUnavailable();
  };
  for (let i = 0; i < 5; i++) await health.checkNow();
  assert.equal(health.up, false);
  answer = async () => 1;
  await health.checkNow();
  assert.equal(health.up, true);
  assert.equal(ups, 1);
  assert.equal(lines.length, 2);
  assert.match(lines[0], /^warn the database cannot be reached/);
  assert.match(lines[1], /^info the database can be reached again/);
});

test('a check that does not answer within its timeout counts as failed', async () => {
  const health = new DatabaseHealth({ check: () => new Promise(() => {}), timeoutMs: 50 });
  await health.checkNow();
  assert.equal(health.up, false);
});

test("a query's connection error marks it down at once; any other error does not", () => {
  const health = new DatabaseHealth({ check: async () => 1 });
  assert.equal(health.failed(new Error('syntax error')), false);
  assert.equal(health.up, true);
  assert.equal(health.failed(Object.assign(new Error('terminating connection'), { code: '57P01' })), true);
  assert.equal(health.up, false);
});

test('without a check (PGlite, in this process) it is always up', async () => {
  const health = new DatabaseHealth({ check: null });
  health.start();
  await health.checkNow();
  assert.equal(health.up, true);
  health.stop();
});
