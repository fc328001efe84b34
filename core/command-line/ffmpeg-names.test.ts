import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ffmpegNamesFromBinary } from './ffmpeg-names-from-binary.ts';
import { FFMPEG_DEMUXERS, FFMPEG_FILTERS, FFMPEG_MUXERS, FFMPEG_OPTIONS } from './ffmpeg-names.ts';

test('ffmpeg-names.ts lists the names the installed ffmpeg knows', () => {
  const binary = ffmpegNamesFromBinary();
  const regenerate = 'write it again: node --import tsx core/command-line/ffmpeg-names-from-binary.ts > core/command-line/ffmpeg-names.ts';
  assert.deepEqual([...FFMPEG_FILTERS], binary.filters, `filters differ; ${regenerate}`);
  assert.deepEqual([...FFMPEG_MUXERS], binary.muxers, `muxers differ; ${regenerate}`);
  assert.deepEqual([...FFMPEG_DEMUXERS], binary.demuxers, `demuxers differ; ${regenerate}`);
  assert.deepEqual([...FFMPEG_OPTIONS], binary.options, `options differ; ${regenerate}`);
  for (const name of ['drawtext', 'xfade', 'palettegen']) assert.ok(FFMPEG_FILTERS.has(name), name);
  for (const name of ['mp4', 'tee', 'segment', 'webm']) assert.ok(FFMPEG_MUXERS.has(name), name);
  for (const name of ['crf', 'filter_complex', 'movflags', 'protocol_whitelist']) assert.ok(FFMPEG_OPTIONS.has(name), name);
});
