import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFfmpegCommand } from '../core/command-line/parse.ts';
import type { RunnerEvent } from '../core/jobs/step-spec.ts';
import { MIN_INTERVAL_MS, progressEvents } from './progress-events.ts';

const command = parseFfmpegCommand('-i {{in_1}} -t 8 {{out_1}}', { inputAliases: new Set(['in_1']), outputAliases: new Set(['out_1']) });
const report = (outTimeSeconds: number, inputDurations: (number | null)[] = [20]) => ({
  outTimeSeconds,
  speed: 2,
  frame: null,
  inputDurations,
});

test('each event carries the expected output length; reports closer together than the interval are dropped', () => {
  const events: RunnerEvent[] = [];
  let now = 1000;
  const { onProgress } = progressEvents(
    command,
    (e) => events.push(e),
    () => now,
  );
  onProgress(report(1));
  now += MIN_INTERVAL_MS - 1;
  onProgress(report(1.5)); // a -stats_period shorter than ours: dropped
  now += 1;
  onProgress(report(2));
  now += MIN_INTERVAL_MS;
  onProgress(report(3, [])); // ffmpeg printed no durations: only -t is known
  assert.deepEqual(events, [
    { type: 'progress', outTimeSeconds: 1, speed: 2, durationSeconds: 8 },
    { type: 'progress', outTimeSeconds: 2, speed: 2, durationSeconds: 8 },
    { type: 'progress', outTimeSeconds: 3, speed: 2, durationSeconds: 8 },
  ]);
});

test('a flood of reports makes at most one event per interval', () => {
  const events: RunnerEvent[] = [];
  let now = 0;
  const { onProgress } = progressEvents(
    command,
    (e) => events.push(e),
    () => now,
  );
  for (let i = 0; i < 10_000; i++, now += 1) onProgress(report(i / 1000));
  assert.equal(events.length, Math.ceil(10_000 / MIN_INTERVAL_MS));
});

test('the last report, when held back, goes out when ffmpeg ends; nothing is sent twice', () => {
  const events: RunnerEvent[] = [];
  let now = 0;
  const progress = progressEvents(
    command,
    (e) => events.push(e),
    () => now,
  );
  progress.onProgress(report(1));
  now += 100;
  progress.onProgress(report(8)); // ffmpeg's final report, right after the one before
  progress.flush();
  progress.flush();
  assert.deepEqual(
    events.map((e) => e.type === 'progress' && e.outTimeSeconds),
    [1, 8],
  );
  const quiet = progressEvents(
    command,
    (e) => events.push(e),
    () => now,
  );
  quiet.onProgress(report(2));
  quiet.flush();
  assert.equal(events.length, 3, 'nothing held back: nothing more to send');
});
