import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFfmpegCommand } from '../command-line/parse.ts';
import { expectedDurationSeconds, parseFfmpegDuration } from './expected-duration.ts';

const parse = (line: string) =>
  parseFfmpegCommand(line, { inputAliases: new Set(['in_1', 'in_2']), outputAliases: new Set(['out_1', 'out_2']) });
const expected = (line: string, durations: (number | null)[]) => expectedDurationSeconds(parse(line), durations);

test('time durations as ffmpeg reads them', () => {
  assert.equal(parseFfmpegDuration('20'), 20);
  assert.equal(parseFfmpegDuration('2.5'), 2.5);
  assert.equal(parseFfmpegDuration('.5'), 0.5);
  assert.equal(parseFfmpegDuration('1500ms'), 1.5);
  assert.equal(parseFfmpegDuration('250000us'), 0.25);
  assert.equal(parseFfmpegDuration('3s'), 3);
  assert.equal(parseFfmpegDuration('01:30'), 90);
  assert.equal(parseFfmpegDuration('01:02:03.5'), 3723.5);
  assert.equal(parseFfmpegDuration('-5'), -5);
  for (const bad of ['', 'abc', '1:2:3:4', '5m', '1e3', 'N/A']) assert.equal(parseFfmpegDuration(bad), null, bad);
});

test('the longest input, or the shortest with -shortest', () => {
  assert.equal(expected('-i {{in_1}} {{out_1}}', [12]), 12);
  assert.equal(expected('-i {{in_1}} -i {{in_2}} {{out_1}}', [12, 30]), 30);
  assert.equal(expected('-i {{in_1}} -i {{in_2}} -shortest {{out_1}}', [12, 30]), 12);
  assert.equal(expected('-i {{in_1}} -i {{in_2}} -shortest {{out_1}}', [12, null]), 12);
});

test('output -t and -to cut it; -ss skips the start', () => {
  assert.equal(expected('-i {{in_1}} -t 5 {{out_1}}', [12]), 5);
  assert.equal(expected('-i {{in_1}} -t 50 {{out_1}}', [12]), 12);
  assert.equal(expected('-i {{in_1}} -ss 2 -to 00:00:08 {{out_1}}', [12]), 6);
  assert.equal(expected('-i {{in_1}} -ss 4 {{out_1}}', [12]), 8);
  assert.equal(expected('-ss 4 -t 3 -i {{in_1}} {{out_1}}', [12]), 3);
  assert.equal(expected('-sseof -2 -i {{in_1}} {{out_1}}', [12]), 2);
});

test('an endless input has a length only when an output limit gives it one', () => {
  assert.equal(expected('-f lavfi -i testsrc {{out_1}}', [null]), null);
  assert.equal(expected('-f lavfi -i testsrc -t 20 {{out_1}}', [null]), 20);
  assert.equal(expected('-stream_loop -1 -i {{in_1}} {{out_1}}', [0.04]), null);
  assert.equal(expected('-stream_loop -1 -i {{in_1}} -t 20 {{out_1}}', [0.04]), 20);
  assert.equal(expected('-i {{in_1}} {{out_1}}', []), null, 'ffmpeg printed nothing (-loglevel error)');
});

test('several outputs: the longest, unknown if one is', () => {
  assert.equal(expected('-i {{in_1}} -t 3 {{out_1}} -t 7 {{out_2}}', [12]), 7);
  assert.equal(expected('-f lavfi -i testsrc -t 3 {{out_1}} {{out_2}}', [null]), null);
});
