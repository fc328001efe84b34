import assert from 'node:assert/strict';
import { test } from 'node:test';
import { progressView, storedProgress } from './progress.ts';

const running = (outTimeSeconds: number, durationSeconds: number | null, speed: number | null = 1.5) => ({
  status: 'PROCESSING',
  progress: { outTimeSeconds, speed, durationSeconds },
});

test('percent: out time over duration, one decimal, clamped to 100; null without a duration', () => {
  assert.deepEqual(progressView(running(5, 20)), { percent: 25, outTimeSeconds: 5, speed: 1.5 });
  assert.equal(progressView(running(1, 3))!.percent, 33.3);
  assert.equal(progressView(running(2, 3))!.percent, 66.7);
  assert.equal(progressView(running(0, 3))!.percent, 0);
  assert.equal(progressView(running(25, 20))!.percent, 100, 'a filter that stretches the output');
  assert.deepEqual(progressView(running(7.1234567, null, null)), { percent: null, outTimeSeconds: 7.123, speed: null });
});

test('shown only while PROCESSING and once ffmpeg has reported', () => {
  for (const status of ['QUEUED', 'SUCCESS', 'FAILED']) assert.equal(progressView({ ...running(5, 20), status }), null, status);
  assert.equal(progressView({ status: 'PROCESSING', progress: null }), null);
});

test("a runner's event is kept only as finite, non-negative numbers (a hostile command can post its own)", () => {
  assert.deepEqual(storedProgress({ outTimeSeconds: 3, speed: 2, durationSeconds: 10 }), {
    outTimeSeconds: 3,
    speed: 2,
    durationSeconds: 10,
  });
  assert.equal(storedProgress({ outTimeSeconds: 'soon', speed: 2, durationSeconds: 10 }), null);
  assert.equal(storedProgress({ outTimeSeconds: -1 }), null);
  assert.equal(storedProgress({ outTimeSeconds: 1e300 }), null);
  assert.equal(storedProgress({}), null);
  assert.deepEqual(storedProgress({ outTimeSeconds: 3, speed: 'fast', durationSeconds: { $gt: 1 } }), {
    outTimeSeconds: 3,
    speed: null,
    durationSeconds: null,
  });
  assert.deepEqual(storedProgress({ outTimeSeconds: 3, speed: -2, durationSeconds: 0 }), {
    outTimeSeconds: 3,
    speed: null,
    durationSeconds: null,
  });
  // An event of an older runner, without a duration.
  assert.deepEqual(storedProgress({ outTimeSeconds: 3, speed: null }), { outTimeSeconds: 3, speed: null, durationSeconds: null });
  // A row holding nonsense shows nothing rather than failing the poll.
  assert.equal(progressView({ status: 'PROCESSING', progress: { outTimeSeconds: 'x' } as never }), null);
});
