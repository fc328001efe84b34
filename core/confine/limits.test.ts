import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prlimitArgs } from './limits.ts';

const base = { memoryBytes: 1000, cpuSeconds: 5, fileSizeBytes: 10, openFiles: 64, processes: 32 };

test('every limit becomes one prlimit flag (soft = hard); processes only for a run with its own uid', () => {
  assert.deepEqual(prlimitArgs(base, true), ['--as=1000', '--cpu=5', '--fsize=10', '--nofile=64', '--nproc=32']);
  // Without a uid of its own, RLIMIT_NPROC would count every process of the service's user.
  assert.deepEqual(prlimitArgs(base, false), ['--as=1000', '--cpu=5', '--fsize=10', '--nofile=64']);
});

test('a limit that is not a positive integer is refused, never passed as "unlimited"', () => {
  assert.throws(() => prlimitArgs({ ...base, memoryBytes: 0 }, false), /invalid limit --as=0/);
  assert.throws(() => prlimitArgs({ ...base, cpuSeconds: 1.5 }, false), /invalid limit --cpu/);
  assert.throws(() => prlimitArgs({ ...base, openFiles: Number.NaN }, false), /invalid limit --nofile/);
  assert.throws(() => prlimitArgs({ ...base, processes: -1 }, true), /invalid limit --nproc/);
});
