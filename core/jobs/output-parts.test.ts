import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_OUTPUT_PARTS, outputPartBytes, partRanges, reportedUploadProblem } from './output-parts.ts';

const MiB = 1024 * 1024;

test('parts cover the file end to end: every part partBytes but the last, which holds the rest', () => {
  assert.deepEqual(partRanges(12 * MiB + 3, 5 * MiB), [
    { partNumber: 1, start: 0, bytes: 5 * MiB },
    { partNumber: 2, start: 5 * MiB, bytes: 5 * MiB },
    { partNumber: 3, start: 10 * MiB, bytes: 2 * MiB + 3 },
  ]);
  assert.deepEqual(partRanges(10 * MiB, 5 * MiB).at(-1), { partNumber: 2, start: 5 * MiB, bytes: 5 * MiB });
  assert.deepEqual(partRanges(1, 5 * MiB), [{ partNumber: 1, start: 0, bytes: 1 }]);
  assert.throws(() => partRanges(0, 5 * MiB), RangeError);
});

test('part size: the minimum for most outputs, larger so that no output takes more than MAX_OUTPUT_PARTS parts', () => {
  assert.equal(outputPartBytes(256 * MiB), 16 * MiB);
  assert.equal(outputPartBytes(12 * MiB, 5 * MiB), 5 * MiB);
  for (const size of [64 * MiB, 1024 * MiB + 1, 20 * 1024 ** 3, 100 * 1024 ** 3]) {
    const parts = partRanges(size, outputPartBytes(size)).length;
    assert.ok(parts <= MAX_OUTPUT_PARTS, `${size} bytes in ${parts} parts`);
  }
  // Never below S3's 5 MiB, whatever minimum is asked for.
  assert.equal(outputPartBytes(12 * MiB, 1), 5 * MiB);
});

test('reported parts: the whole output in the planned parts, numbered in order, with ETags', () => {
  const etag = '"0123456789abcdef0123456789abcdef"';
  const parts = (n: number) => Array.from({ length: n }, (_, i) => ({ partNumber: i + 1, etag }));
  const size = 12 * MiB;
  assert.equal(reportedUploadProblem({ uploadId: 'abc-123', parts: parts(3) }, size, 5 * MiB), null);
  assert.match(reportedUploadProblem({ uploadId: 'abc-123', parts: parts(2) }, size, 5 * MiB)!, /2 parts listed, 12582912 bytes take 3/);
  assert.match(reportedUploadProblem({ uploadId: 'abc-123', parts: parts(4) }, size, 5 * MiB)!, /4 parts listed/);
  const swapped = [parts(3)[0], { partNumber: 3, etag }, { partNumber: 2, etag }];
  assert.match(reportedUploadProblem({ uploadId: 'abc-123', parts: swapped }, size, 5 * MiB)!, /parts\.1\.partNumber: 3 where 2 belongs/);
  const badEtag = [...parts(2), { partNumber: 3, etag: 'a"b' }];
  assert.match(reportedUploadProblem({ uploadId: 'abc-123', parts: badEtag }, size, 5 * MiB)!, /parts\.2\.etag/);
  assert.match(reportedUploadProblem({ uploadId: 'x&partNumber=1', parts: parts(3) }, size, 5 * MiB)!, /uploadId/);
  assert.match(reportedUploadProblem({ uploadId: 'abc', parts: parts(1) }, 0)!, /cannot have been uploaded in parts/);
});
