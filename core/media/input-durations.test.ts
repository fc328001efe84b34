import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { InputDurationReader } from './input-durations.ts';

const run = promisify(execFile);

test("ffmpeg's own stderr: each input's duration by index, N/A as null", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-durations-'));
  try {
    const clip = join(dir, 'clip.mp4');
    await run('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=32x32:duration=3', clip]);
    // ffmpeg prints the inputs before anything runs; -t keeps the run short.
    const { stderr } = await run('ffmpeg', ['-hide_banner', '-i', clip, '-f', 'lavfi', '-i', 'testsrc', '-t', '0.1', '-f', 'null', '-']);
    const reader = new InputDurationReader();
    // In small pieces, as a pipe delivers it.
    for (let i = 0; i < stderr.length; i += 7) reader.push(Buffer.from(stderr.slice(i, i + 7)));
    assert.deepEqual(reader.durations(), [3, null]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('hours, minutes and fractions; lines after the inputs are not read', () => {
  const reader = new InputDurationReader();
  reader.push(
    [
      "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'a.mp4':",
      '  Metadata:',
      '    comment         : Duration: 00:00:01.00',
      '  Duration: 01:02:03.50, start: 0.000000, bitrate: 198 kb/s',
      "Input #1, wav, from 'b.wav':",
      '  Duration: 00:00:07.25, bitrate: 1411 kb/s',
      'Stream mapping:',
      "Input #2, wav, from 'c.wav':",
      '  Duration: 00:09:00.00, bitrate: 1411 kb/s',
      '',
    ].join('\n'),
  );
  assert.deepEqual(reader.durations(), [3723.5, 7.25]);
});

test('nothing printed (-loglevel error): no durations', () => {
  const reader = new InputDurationReader();
  reader.push('[h264 @ 0x1] some error\n');
  assert.deepEqual(reader.durations(), []);
});
