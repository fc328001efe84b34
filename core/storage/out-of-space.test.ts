import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ffmpegRanOutOfSpace, isOutOfSpace, outOfSpaceMessage } from './out-of-space.ts';

test('ENOSPC and EDQUOT are a full disk; other errors are not', () => {
  assert.equal(isOutOfSpace(Object.assign(new Error('write'), { code: 'ENOSPC' })), true);
  assert.equal(isOutOfSpace(Object.assign(new Error('write'), { code: 'EDQUOT' })), true);
  assert.equal(isOutOfSpace(Object.assign(new Error('open'), { code: 'EACCES' })), false);
  assert.equal(isOutOfSpace(new Error('No space left on device')), false);
  assert.equal(isOutOfSpace(null), false);
});

test("ffmpeg's own words for ENOSPC and EDQUOT are recognised in its stderr", () => {
  assert.equal(ffmpegRanOutOfSpace('av_interleaved_write_frame(): No space left on device\nError writing trailer'), true);
  assert.equal(ffmpegRanOutOfSpace('out.mp4: Disk quota exceeded'), true);
  assert.equal(ffmpegRanOutOfSpace("Stream map '0:s' matches no streams."), false);
});

test('the message says the service ran out of space, what it was writing, and ends with the detail', () => {
  assert.equal(
    outOfSpaceMessage('storing out_1', 'ENOSPC'),
    'the service ran out of disk space while storing out_1; nothing is wrong with the request, try again later: ENOSPC',
  );
});
