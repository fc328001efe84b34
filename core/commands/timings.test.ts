import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timingsView, total, withStepEnded } from './timings.ts';

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);
const createdAt = at(0);

test('a single command: queued from its creation to its start, the runner phases as reported', () => {
  const timings = withStepEnded(
    { step: 0, createdAt, stepStartedAt: at(2.5), timings: null, downloadSeconds: 0.4, ffmpegSeconds: 1.25, uploadSeconds: 0.3 },
    at(5),
  );
  assert.deepEqual(timings, [
    { step: 0, queuedSeconds: 2.5, downloadSeconds: 0.4, ffmpegSeconds: 1.25, uploadSeconds: 0.3, endedAt: at(5).toISOString() },
  ]);
  const view = timingsView({ currentStep: 0, createdAt, stepStartedAt: at(2.5), timings });
  assert.deepEqual(view, {
    queued_seconds: 2.5,
    download_seconds: 0.4,
    ffmpeg_seconds: 1.25,
    upload_seconds: 0.3,
    steps: [{ step: 1, queued_seconds: 2.5, download_seconds: 0.4, ffmpeg_seconds: 1.25, upload_seconds: 0.3 }],
  });
});

test('a chain: a later step is queued from the end of the one before; the running step shows its queued seconds only', () => {
  const first = withStepEnded(
    { step: 0, createdAt, stepStartedAt: at(1), timings: null, downloadSeconds: 1, ffmpegSeconds: 2, uploadSeconds: 0.5 },
    at(5),
  );
  // Step 2 released by the cluster's queue 3 s after step 1 ended.
  const running = timingsView({ currentStep: 1, createdAt, stepStartedAt: at(8), timings: first });
  assert.deepEqual(running.steps[1], { step: 2, queued_seconds: 3, download_seconds: null, ffmpeg_seconds: null, upload_seconds: null });
  assert.equal(running.queued_seconds, 4);
  assert.equal(running.ffmpeg_seconds, 2, 'the totals add what is known so far');
  const both = withStepEnded({ step: 1, createdAt, stepStartedAt: at(8), timings: first, ffmpegSeconds: 0.1 }, at(10));
  const ended = timingsView({ currentStep: 1, createdAt, stepStartedAt: at(8), timings: both });
  assert.equal(ended.steps.length, 2);
  assert.deepEqual(ended.steps[1], { step: 2, queued_seconds: 3, download_seconds: null, ffmpeg_seconds: 0.1, upload_seconds: null });
  assert.equal(ended.ffmpeg_seconds, 2.1);
  assert.equal(ended.download_seconds, 1, 'an older runner that reports no download leaves the total at what is known');
});

test('nothing known yet: a waiting command shows null totals and no steps', () => {
  assert.deepEqual(timingsView({ currentStep: 0, createdAt, stepStartedAt: null, timings: null }), {
    queued_seconds: null,
    download_seconds: null,
    ffmpeg_seconds: null,
    upload_seconds: null,
    steps: [],
  });
});

test('a step that ran again replaces its entry; a start before the creation (clock skew) counts as 0', () => {
  const once = withStepEnded({ step: 0, createdAt, stepStartedAt: at(-1), timings: null, ffmpegSeconds: 9 }, at(3));
  assert.equal(once[0].queuedSeconds, 0);
  const again = withStepEnded({ step: 0, createdAt, stepStartedAt: at(1), timings: once, ffmpegSeconds: 2 }, at(4));
  assert.equal(again.length, 1);
  assert.equal(again[0].ffmpegSeconds, 2);
});

test('totals add unrounded values in step order, as ffmpeg_command_run_seconds does, then round to milliseconds', () => {
  const values = [0.1, 0.2, 0.30000000000000004, 1.0004];
  assert.equal(total(values), Number(values.reduce((sum, x) => sum + x, 0).toFixed(3)));
  assert.equal(total([null, null]), null);
  assert.equal(total([]), null);
  assert.equal(total([null, 1.23456]), 1.235);
});
