import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unknownMedia } from '../media/unknown-media.ts';
import { resultProblem, type StepBounds } from './result-bounds.ts';
import type { OutputResult, RunnerEvent } from './step-spec.ts';

const GiB = 1024 ** 3;
const step: StepBounds = {
  outputs: [
    { alias: 'out_1', fileName: 'o.mp4', kind: 'file' },
    { alias: 'out_2', fileName: 'index.m3u8', kind: 'playlist' },
  ],
  downloads: 2,
  downloadMaxBytes: GiB,
  maxOutputFileBytes: 2 * GiB,
  maxOutputFiles: 100,
  maxCommandRunSeconds: 60,
  diskBytes: 10 * GiB,
  outputPartMinBytes: 16 * 1024 ** 2,
};
const file: OutputResult = { alias: 'out_1', fileName: 'o.mp4', size: 1000, media: unknownMedia('o.mp4') };
const playlist: OutputResult = {
  alias: 'out_2',
  fileName: 'index.m3u8',
  size: 5000,
  fileCount: 4,
  compressedSize: 4800,
  media: unknownMedia('index.m3u8'),
};
const success = (
  outputs: OutputResult[],
  top: Partial<Extract<RunnerEvent, { ok: true }>> = {},
): Extract<RunnerEvent, { type: 'result' }> => ({
  type: 'result',
  ok: true,
  ffmpegSeconds: 2,
  inputBytes: 100,
  outputs,
  ...top,
});

test('a result the step could have made passes', () => {
  assert.equal(resultProblem(success([file, playlist]), step), null);
  assert.equal(resultProblem(success([playlist, file], { inputBytes: 2 * GiB, ffmpegSeconds: 119 }), step), null);
  const failure = {
    type: 'result',
    ok: false,
    errorStatus: 'FFMPEG_FAILED',
    errorMessage: 'x',
    ffmpegSeconds: null,
    inputBytes: 0,
  } as const;
  assert.equal(resultProblem(failure, step), null);
});

test('attack: an output the step did not declare, one reported twice, or one missing, is named', () => {
  assert.equal(
    resultProblem(success([file, playlist, { ...file, alias: 'out_9' }]), step),
    'outputs.2.alias: "out_9" is not an output of this step (it writes out_1, out_2)',
  );
  assert.match(resultProblem(success([file, playlist, file]), step)!, /^outputs\.2\.alias: "out_1" is reported twice/);
  assert.match(resultProblem(success([file]), step)!, /^outputs: out_2 is missing/);
  assert.match(resultProblem(success([{ ...file, fileName: '../x.mp4' }, playlist]), step)!, /^outputs\.0\.fileName: /);
});

test('attack: sizes and counts beyond what the step could write are refused', () => {
  assert.match(resultProblem(success([{ ...file, size: 3 * GiB }, playlist]), step)!, /^outputs\.0\.size: .*one file may hold/);
  assert.match(resultProblem(success([{ ...file, size: 0 }, playlist]), step)!, /^outputs\.0\.size: /);
  assert.match(resultProblem(success([{ ...file, fileCount: 2 }, playlist]), step)!, /^outputs\.0\.fileCount: /);
  assert.match(resultProblem(success([file, { ...playlist, fileCount: 101 }]), step)!, /^outputs\.1\.fileCount: /);
  assert.match(resultProblem(success([file, { ...playlist, size: 4 * 2 * GiB + 1 }]), step)!, /^outputs\.1\.size: /);
  assert.match(resultProblem(success([file, { ...playlist, compressedSize: 10 * GiB }]), step)!, /^outputs\.1\.compressedSize: /);
  assert.match(resultProblem(success([file, { ...playlist, compressedSize: undefined }]), step)!, /^outputs\.1\.fileCount: /);
  // Every output within its own bound, but more than the disk holds together.
  const big = { ...playlist, size: 9 * GiB, fileCount: 5, compressedSize: 9 * GiB };
  assert.match(resultProblem(success([{ ...file, size: 2 * GiB }, big]), step)!, /^outputs: .*disk/);
  assert.match(resultProblem(success([file, playlist], { inputBytes: 2 * GiB + 1 }), step)!, /^inputBytes: /);
  assert.match(resultProblem(success([file, playlist], { ffmpegSeconds: 121 }), step)!, /^ffmpegSeconds: /);
  // Without a known disk, the downloads alone bound the input.
  assert.equal(resultProblem(success([file, playlist], { inputBytes: 2 * GiB }), { ...step, diskBytes: null }), null);
});

test('an output uploaded in parts: the parts planned for its size; none where outputs go whole', () => {
  const MiB = 1024 ** 2;
  const parts = (n: number) => Array.from({ length: n }, (_, i) => ({ partNumber: i + 1, etag: `"${'ab'.repeat(16)}"` }));
  const big = { ...file, size: 100 * MiB };
  const zipped = { ...playlist, size: 120 * MiB, compressedSize: 100 * MiB };
  assert.equal(resultProblem(success([{ ...big, upload: { uploadId: 'u1', parts: parts(7) } }, playlist]), step), null);
  assert.equal(resultProblem(success([file, { ...zipped, upload: { uploadId: 'u2', parts: parts(7) } }]), step), null);
  assert.match(
    resultProblem(success([{ ...big, upload: { uploadId: 'u1', parts: parts(6) } }, playlist]), step)!,
    /^outputs\.0\.upload\.parts: 6 parts listed/,
  );
  assert.match(
    resultProblem(success([{ ...big, upload: { uploadId: 'u1', parts: parts(7) } }, playlist]), { ...step, outputPartMinBytes: null })!,
    /^outputs\.0\.upload: this step uploads its outputs whole/,
  );
});
