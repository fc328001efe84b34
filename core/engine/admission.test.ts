import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admit, sharedVcpus, type AdmissionCandidate } from './admission.ts';

const cmd = (id: string, accountId: string, vcpuCount: number): AdmissionCandidate => ({ id, accountId, vcpuCount });

test('admits in arrival order while the account maximum allows', () => {
  const ids = admit({
    running: [],
    queued: [cmd('a1', 'A', 2), cmd('a2', 'A', 2), cmd('a3', 'A', 2)],
    maxVcpusOf: () => 4,
    capacityVcpus: null,
  });
  assert.deepEqual(ids, ['a1', 'a2']);
});

test('counts running commands against the account maximum', () => {
  const ids = admit({ running: [cmd('r', 'A', 3)], queued: [cmd('a1', 'A', 2)], maxVcpusOf: () => 4, capacityVcpus: null });
  assert.deepEqual(ids, []);
});

test('a command that does not fit blocks its account (FIFO) but not other accounts', () => {
  const ids = admit({
    running: [cmd('r', 'A', 2)],
    queued: [cmd('a1', 'A', 4), cmd('a2', 'A', 1), cmd('b1', 'B', 1)],
    maxVcpusOf: () => 4,
    capacityVcpus: null,
  });
  assert.deepEqual(ids, ['b1']);
});

test('capacity is shared; a request larger than the machine still runs, using the whole machine', () => {
  assert.deepEqual(admit({ running: [], queued: [cmd('a1', 'A', 8), cmd('b1', 'B', 8)], maxVcpusOf: () => 32, capacityVcpus: 2 }), ['a1']);
  assert.deepEqual(admit({ running: [cmd('a1', 'A', 8)], queued: [cmd('b1', 'B', 1)], maxVcpusOf: () => 32, capacityVcpus: 2 }), []);
  assert.deepEqual(
    admit({ running: [cmd('a1', 'A', 1)], queued: [cmd('b1', 'B', 1), cmd('b2', 'B', 1)], maxVcpusOf: () => 32, capacityVcpus: 2 }),
    ['b1'],
  );
});

test('sharedVcpus counts each command at most at the whole capacity', () => {
  assert.equal(sharedVcpus([{ vcpuCount: 8 }, { vcpuCount: 1 }], 2), 3);
  assert.equal(sharedVcpus([], 2), 0);
});
