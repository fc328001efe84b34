import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_RETRY_DELAYS_MS, maxAttempts, nextRetryDelayMs } from './retry-schedule.ts';

test('the default schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then give up; about a day in all', () => {
  const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => nextRetryDelayMs(n));
  assert.deepEqual(delays, [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  assert.equal(nextRetryDelayMs(8), null);
  assert.equal(maxAttempts(), 8);
  const hours = DEFAULT_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0) / 3600_000;
  assert.ok(hours > 24 && hours < 30, `${hours} h`);
});

test('each delay is longer than or as long as the one before', () => {
  for (let i = 1; i < DEFAULT_RETRY_DELAYS_MS.length; i++) assert.ok(DEFAULT_RETRY_DELAYS_MS[i] >= DEFAULT_RETRY_DELAYS_MS[i - 1]);
});

test('an injected schedule is followed, and its end is giving up', () => {
  assert.equal(nextRetryDelayMs(1, [10, 20]), 10);
  assert.equal(nextRetryDelayMs(2, [10, 20]), 20);
  assert.equal(nextRetryDelayMs(3, [10, 20]), null);
  assert.equal(nextRetryDelayMs(1, []), null);
  assert.throws(() => nextRetryDelayMs(0, [10]));
});
