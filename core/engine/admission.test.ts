import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admitToCapacity, capacityTaken, sharedVcpus } from './admission.ts';

const cmd = (id: string, vcpuCount: number) => ({ id, vcpuCount, finishing: false });
const finishing = (vcpuCount: number) => ({ vcpuCount, finishing: true });

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
  assert.equal(sharedVcpus([cmd('a', 8), cmd('b', 1)], 2), 3);
  assert.equal(sharedVcpus([], 2), 0);
});

test('a command storing its outputs holds no share: the next one starts beside it', () => {
  assert.equal(sharedVcpus([finishing(8), cmd('b', 1)], 2), 1);
  assert.deepEqual(admitToCapacity([finishing(8)], [cmd('a1', 8), cmd('b1', 1)], 2), ['a1']);
  assert.equal(capacityTaken([finishing(8)], 2), false);
});

test('at most one finishing command per vCPU of the capacity: more would pile up runners behind slow storage', () => {
  assert.equal(capacityTaken([finishing(1), finishing(1)], 2), true);
  assert.deepEqual(admitToCapacity([finishing(1), finishing(1)], [cmd('a1', 1)], 2), []);
  assert.deepEqual(admitToCapacity([finishing(1), cmd('r', 1)], [cmd('a1', 1), cmd('a2', 1)], 2), ['a1']);
});
