import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prlimitArgs } from './limits.ts';

test('every limit becomes one prlimit flag (soft = hard); processes only when given', () => {
  const base = { memoryBytes: 1000, cpuSeconds: 5, fileSizeBytes: 10, openFiles: 64 };
  assert.deepEqual(prlimitArgs(base), ['--as=1000', '--cpu=5', '--fsize=10', '--nofile=64']);
  assert.deepEqual(prlimitArgs({ ...base, processes: 32 }).at(-1), '--nproc=32');
});

test('a limit that is not a positive integer is refused, never passed as "unlimited"', () => {
  const base = { memoryBytes: 1000, cpuSeconds: 5, fileSizeBytes: 10, openFiles: 64 };
  assert.throws(() => prlimitArgs({ ...base, memoryBytes: 0 }), /invalid limit --as=0/);
  assert.throws(() => prlimitArgs({ ...base, cpuSeconds: 1.5 }), /invalid limit --cpu/);
  assert.throws(() => prlimitArgs({ ...base, openFiles: Number.NaN }), /invalid limit --nofile/);
});
