import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ffmpegErrorText } from './ffmpeg-error.ts';

async function stderrOf(args: string[]): Promise<string> {
  try {
    await promisify(execFile)('ffmpeg', ['-hide_banner', '-nostdin', ...args]);
    throw new Error('ffmpeg succeeded');
  } catch (err) {
    return (err as { stderr: string }).stderr;
  }
}

test('the cause comes first, before the stream report ffmpeg printed ahead of it', async () => {
  const stderr = await stderrOf(['-f', 'lavfi', '-i', 'testsrc=d=0.1', '-map', '0:s', '-f', 'null', '-']);
  assert.match(stderr, /^Input #0/m, 'ffmpeg printed its report first');
  const text = ffmpegErrorText(stderr);
  assert.match(text.split('\n')[0], /^Stream map '0:s' matches no streams\./);
  assert.match(text, /--\n[\s\S]*Stream #0:0/, 'the report follows');
});

test('an error from a muxer or an option, and a stderr that is only report lines, are kept', async () => {
  const unknown = ffmpegErrorText(await stderrOf(['-f', 'lavfi', '-i', 'testsrc=d=0.1', '-c:v', 'nosuchcodec', '-f', 'null', '-']));
  assert.match(unknown.split('\n')[0], /Unknown encoder 'nosuchcodec'/);
  assert.equal(ffmpegErrorText('  Duration: N/A\n  Stream #0:0: Video: h264\n'), '  Duration: N/A\n  Stream #0:0: Video: h264');
  assert.ok(ffmpegErrorText('x'.repeat(5000)).length <= 1500);
});
