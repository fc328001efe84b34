// Whether a step's pod could ever run on some node: a step that asks more than the largest node has
// would wait for the whole of its deadline and then fail for a reason that is not its own.
import type { V1Node } from '@kubernetes/client-node';
import { formatBytes, parseQuantity } from './quantity.ts';

/** What a runner pod asks: cores, and bytes of memory and of ephemeral storage. */
export interface PodAsk {
  cpu: number;
  memory: number;
  disk: number;
}

interface NodeSize extends PodAsk {
  name: string;
}

/** Nodes a runner pod may be placed on: those whose labels match the runner's nodeSelector. */
export function eligibleNodes(nodes: readonly V1Node[], nodeSelector: Record<string, string> | undefined): V1Node[] {
  const wanted = Object.entries(nodeSelector ?? {});
  return nodes.filter((n) => wanted.every(([k, v]) => n.metadata?.labels?.[k] === v));
}

function sizeOf(node: V1Node): NodeSize {
  const a = node.status?.allocatable ?? {};
  return {
    name: node.metadata?.name ?? '?',
    cpu: parseQuantity(a.cpu) ?? 0,
    memory: parseQuantity(a.memory) ?? 0,
    disk: parseQuantity(a['ephemeral-storage']) ?? 0,
  };
}

/**
 * Why `ask` fits no node of `nodes` (already filtered by eligibleNodes), naming the largest; null when
 * one node has room for it, or when no node is known (a cluster autoscaler may be about to add one).
 */
export function unfitReason(ask: PodAsk, nodes: V1Node[]): string | null {
  if (nodes.length === 0) return null;
  const sizes = nodes.map(sizeOf);
  if (sizes.some((n) => ask.cpu <= n.cpu && ask.memory <= n.memory && ask.disk <= n.disk)) return null;
  const largest = sizes.reduce((a, b) => (b.cpu > a.cpu || (b.cpu === a.cpu && b.memory > a.memory) ? b : a));
  return (
    `the step asks ${ask.cpu} vCPUs, ${formatBytes(ask.memory)} of memory and ${formatBytes(ask.disk)} of disk, ` +
    `more than any node of the cluster has room for; the largest, ${largest.name}, has ${largest.cpu} vCPUs, ` +
    `${formatBytes(largest.memory)} of memory and ${formatBytes(largest.disk)} of disk allocatable` +
    (nodes.length > 1 ? ` (${nodes.length} nodes)` : '')
  );
}
