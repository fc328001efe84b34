import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admitToCapacity, sharedVcpus } from './admission.ts';

const cmd = (id: string, vcpuCount: number) => ({ id, vcpuCount });

test('without a shared capacity every admissible command starts', () => {
  assert.deepEqual(admitToCapacity([cmd('r', 8)], [cmd('a1', 8), cmd('b1', 4)], null), ['a1', 'b1']);
});

test('capacity is shared; a request larger than the machine still runs, using the whole machine', () => {
  assert.deepEqual(admitToCapacity([], [cmd('a1', 8), cmd('b1', 8)], 2), ['a1']);
  assert.deepEqual(admitToCapacity([cmd('a1', 8)], [cmd('b1', 1)], 2), []);
  assert.deepEqual(admitToCapacity([cmd('a1', 1)], [cmd('b1', 1), cmd('b2', 1)], 2), ['b1']);
});

test('first come, first served: a command that does not fit stops the pass, a smaller one behind it waits', () => {
  assert.deepEqual(admitToCapacity([cmd('r', 1)], [cmd('a1', 2), cmd('b1', 1)], 2), []);
});

test('sharedVcpus counts each command at most at the whole capacity', () => {
  assert.equal(sharedVcpus([{ vcpuCount: 8 }, { vcpuCount: 1 }], 2), 3);
  assert.equal(sharedVcpus([], 2), 0);
});
