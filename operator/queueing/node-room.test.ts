import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { eligibleNodes, unfitReason } from './node-room.ts';

const GiB = 2 ** 30;
const node = (name: string, cpu: string, memory: string, disk: string, labels: Record<string, string> = {}): V1Node => ({
  metadata: { name, labels },
  status: { allocatable: { cpu, memory, 'ephemeral-storage': disk, pods: '110' } },
});

test('a step that fits one node is not refused, whichever node that is', () => {
  const nodes = [node('small', '2', '8Gi', '100Gi'), node('big', '16', '64Gi', '500Gi')];
  assert.equal(unfitReason({ cpu: 8, memory: 10 * GiB, disk: 50 * GiB }, nodes), null);
  assert.equal(unfitReason({ cpu: 2, memory: 8 * GiB, disk: 100 * GiB }, nodes), null, 'exactly the allocatable fits');
});

test('a step larger than every node is refused, naming the largest and its size', () => {
  const nodes = [node('node-a', '2', '23Gi', '249Gi'), node('node-b', '1500m', '64Gi', '249Gi')];
  const reason = unfitReason({ cpu: 8, memory: GiB, disk: 10 * GiB }, nodes);
  assert.equal(
    reason,
    'the step asks 8 vCPUs, 1 GiB of memory and 10 GiB of disk, more than any node of the cluster has room for; ' +
      'the largest, node-a, has 2 vCPUs, 23 GiB of memory and 249 GiB of disk allocatable (2 nodes)',
  );
});

test('every resource counts together: enough CPU on one node and enough disk on another is no fit', () => {
  const nodes = [node('cpu-rich', '32', '64Gi', '20Gi'), node('disk-rich', '2', '8Gi', '2Ti')];
  assert.match(unfitReason({ cpu: 8, memory: GiB, disk: 100 * GiB }, nodes) ?? '', /largest, cpu-rich, has 32 vCPUs/);
});

test('no known node refuses nothing (an autoscaler may add one); the nodeSelector decides which nodes count', () => {
  assert.equal(unfitReason({ cpu: 64, memory: GiB, disk: GiB }, []), null);
  const nodes = [node('general', '64', '256Gi', '1Ti'), node('media', '4', '16Gi', '200Gi', { pool: 'media' })];
  const media = eligibleNodes(nodes, { pool: 'media' });
  assert.deepEqual(
    media.map((n) => n.metadata?.name),
    ['media'],
  );
  assert.match(unfitReason({ cpu: 8, memory: GiB, disk: GiB }, media) ?? '', /largest, media, has 4 vCPUs/);
  assert.equal(eligibleNodes(nodes, undefined).length, 2);
});
