import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unknownMedia } from '../media/unknown-media.ts';
import { parseRunnerEvent } from './runner-event-schema.ts';

const success = (output: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
  type: 'result',
  ok: true,
  ffmpegSeconds: 1.5,
  inputBytes: 10,
  outputs: [{ alias: 'out_1', fileName: 'o.mp4', size: 1000, media: unknownMedia('o.mp4'), ...output }],
  ...top,
});
const problem = (value: unknown) => {
  const parsed = parseRunnerEvent(value);
  return parsed.ok ? null : parsed.problem;
};

test('every event the runner sends passes as it is', () => {
  const events = [
    { type: 'stage', stage: 'UPLOADING' },
    { type: 'progress', outTimeSeconds: 1.2, speed: null, durationSeconds: null },
    { type: 'progress', outTimeSeconds: 0, speed: 2.5, durationSeconds: 10 },
    success(),
    success({ fileCount: 3, compressedSize: 900 }),
    {
      type: 'result',
      ok: false,
      errorStatus: 'FFMPEG_FAILED',
      errorMessage: 'ffmpeg exited with code 1',
      ffmpegSeconds: null,
      inputBytes: 0,
    },
  ];
  for (const event of events) assert.deepEqual(parseRunnerEvent(event), { ok: true, event }, JSON.stringify(event));
});

test('attack: sizes and counts must be non-negative whole numbers a JavaScript number holds exactly', () => {
  assert.match(problem(success({ size: -1 }))!, /^outputs\.0\.size: /);
  assert.match(problem(success({ size: 1e300 }))!, /^outputs\.0\.size: /);
  assert.match(problem(success({ size: 1.5 }))!, /^outputs\.0\.size: /);
  assert.match(problem(success({ size: '1000' }))!, /^outputs\.0\.size: .*number/);
  assert.match(problem(success({}, { inputBytes: -5 }))!, /^inputBytes: /);
  assert.match(problem(success({ fileCount: 0, compressedSize: 1 }))!, /^outputs\.0\.fileCount: /);
  assert.match(problem(success({}, { ffmpegSeconds: -1 }))!, /^ffmpegSeconds: /);
  assert.match(problem(success({}, { ffmpegSeconds: 1e12 }))!, /^ffmpegSeconds: /);
});

test('attack: media fields are typed and bounded, and nothing else may come along', () => {
  const media = (fields: Record<string, unknown>) => success({ media: { ...unknownMedia('o.mp4'), ...fields } });
  assert.match(problem(media({ codec: 'x'.repeat(201) }))!, /^outputs\.0\.media\.codec: /);
  assert.match(problem(media({ width: -5 }))!, /^outputs\.0\.media\.width: /);
  assert.match(problem(media({ height: 2.5 }))!, /^outputs\.0\.media\.height: /);
  assert.match(problem(media({ duration: 'long' }))!, /^outputs\.0\.media\.duration: /);
  assert.match(problem(media({ file_type: 'script' }))!, /^outputs\.0\.media\.file_type: /);
  assert.match(problem(media({ is_varying_frame_rate: 'yes' }))!, /^outputs\.0\.media\.is_varying_frame_rate: /);
  assert.match(problem(media({ extra: 1 }))!, /^outputs\.0\.media\.extra: /);
  assert.match(problem(success({ extra: 1 }))!, /^outputs\.0\.extra: /);
  assert.match(problem(success({}, { extra: 1 }))!, /^extra: /);
  const { media: _, ...noMedia } = success().outputs[0];
  assert.match(problem({ ...success(), outputs: [noMedia] })!, /^outputs\.0\.media: /);
});

test('attack: arrays and texts have their bounds', () => {
  const many = Array.from({ length: 21 }, (_, i) => ({ ...success().outputs[0], alias: `out_${i}` }));
  assert.match(problem({ ...success(), outputs: many })!, /^outputs: /);
  assert.match(problem(success({ alias: 'a'.repeat(101) }))!, /^outputs\.0\.alias: /);
  assert.match(problem(success({ fileName: 'a'.repeat(256) }))!, /^outputs\.0\.fileName: /);
  const failure = { type: 'result', ok: false, errorStatus: 'FFMPEG_FAILED', errorMessage: 'x', ffmpegSeconds: null, inputBytes: 0 };
  assert.match(problem({ ...failure, errorMessage: 'x'.repeat(8001) })!, /^errorMessage: /);
  assert.match(problem({ ...failure, errorStatus: 'ALL_GOOD' })!, /^errorStatus: /);
});

test('attack: stages, progress and the type itself are checked too', () => {
  assert.match(problem({ type: 'stage', stage: 'x'.repeat(1000) })!, /^stage: /);
  assert.match(problem({ type: 'progress', outTimeSeconds: -1, speed: null, durationSeconds: null })!, /^outTimeSeconds: /);
  assert.match(problem({ type: 'progress', outTimeSeconds: 1, speed: null, durationSeconds: null, extra: 'x' })!, /^extra: /);
  assert.match(problem({ type: 'launch' })!, /^type: /);
  assert.match(problem('result')!, /^event: /);
  assert.match(problem({ type: 'result', ok: 'yes' })!, /^ok: /);
});

test('the runner phase seconds are optional (an older runner sends none) and bounded like ffmpeg seconds', () => {
  const failed = { type: 'result', ok: false, errorStatus: 'FFMPEG_FAILED', errorMessage: 'x', ffmpegSeconds: 1, inputBytes: 0 };
  for (const event of [
    success({}, { downloadSeconds: 0.25, uploadSeconds: 3 }),
    success({}, { downloadSeconds: 0 }),
    { ...failed, downloadSeconds: 2 },
  ]) {
    assert.deepEqual(parseRunnerEvent(event), { ok: true, event }, JSON.stringify(event));
  }
  assert.match(problem(success({}, { downloadSeconds: -1 }))!, /^downloadSeconds: /);
  assert.match(problem(success({}, { uploadSeconds: 'soon' }))!, /^uploadSeconds: /);
  assert.match(problem({ ...failed, uploadSeconds: Infinity })!, /^uploadSeconds: /);
  assert.match(problem(success({}, { downloadSeconds: null }))!, /^downloadSeconds: /);
});
