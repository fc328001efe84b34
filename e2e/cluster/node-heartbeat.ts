// The node half of the kubelet stand-in: registers the Node (Ready, with allocatable resources) and
// keeps it alive the way a kubelet does: its Lease in kube-node-lease is renewed every interval,
// and the Node's conditions get a fresh heartbeat now and then. The node lifecycle controller
// taints and evicts pods from nodes whose Lease and status both go stale.
import { arch, hostname, release } from 'node:os';
import {
  PatchStrategy,
  V1MicroTime,
  setHeaderOptions,
  type CoordinationV1Api,
  type CoreV1Api,
  type V1Node,
  type V1NodeCondition,
} from '@kubernetes/client-node';
import { sleep, type AgentLogger } from './list-watch.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const LEASE_DURATION_SECONDS = 40;
/** The Node's status is refreshed on every this many lease renewals (the kubelet: 10 s vs 5 min). */
const STATUS_EVERY_N_RENEWALS = 12;

export interface NodeHeartbeatOptions {
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  nodeName: string;
  intervalMs: number;
  /** Capacity reported as both capacity and allocatable. */
  resources: Record<string, string>;
  labels?: Record<string, string>;
  logger: AgentLogger;
}

export interface NodeHeartbeat {
  stop(): Promise<void>;
}

const strategicMerge = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export async function startNodeHeartbeat(opts: NodeHeartbeatOptions): Promise<NodeHeartbeat> {
  const { core, coordination, nodeName, logger } = opts;
  const since = new Date();

  const node = await createOrGetNode(opts, since);
  await reportNodeStatus(core, nodeName, since);
  await renewLease(coordination, nodeName, node.metadata?.uid);

  const stopping = new AbortController();
  async function loop(): Promise<void> {
    for (let tick = 1; !stopping.signal.aborted; tick++) {
      await sleep(opts.intervalMs, stopping.signal);
      if (stopping.signal.aborted) break;
      try {
        await renewLease(coordination, nodeName, node.metadata?.uid);
        if (tick % STATUS_EVERY_N_RENEWALS === 0) await reportNodeStatus(core, nodeName, since);
      } catch (err) {
        logger.warn({ node: nodeName, err: String(err) }, 'node heartbeat failed');
      }
    }
  }
  const running = loop();
  return {
    async stop() {
      stopping.abort();
      await running;
    },
  };
}

async function createOrGetNode(opts: NodeHeartbeatOptions, since: Date): Promise<V1Node> {
  const body: V1Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: opts.nodeName,
      labels: {
        'kubernetes.io/hostname': opts.nodeName,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': goArch(),
        ...opts.labels,
      },
    },
    spec: {},
    status: {
      capacity: opts.resources,
      allocatable: opts.resources,
      conditions: nodeConditions(since, new Date()),
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: opts.nodeName },
      ],
      nodeInfo: {
        architecture: goArch(),
        operatingSystem: 'linux',
        osImage: `local processes on ${hostname()}`,
        kernelVersion: release(),
        containerRuntimeVersion: 'ffop-node-agent://0',
        kubeletVersion: 'ffop-node-agent',
        kubeProxyVersion: '',
        bootID: '',
        machineID: '',
        systemUUID: '',
      },
    },
  };
  try {
    return await opts.core.createNode({ body });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
    // A node left by an earlier agent of the same name: take it over.
    return await opts.core.readNode({ name: opts.nodeName });
  }
}

/** Architecture as Kubernetes names it (Go's GOARCH). */
function goArch(): string {
  const names: Record<string, string> = { x64: 'amd64', ia32: '386', arm: 'arm', arm64: 'arm64' };
  return names[arch()] ?? arch();
}

function nodeConditions(since: Date, now: Date): V1NodeCondition[] {
  const condition = (type: string, status: string, reason: string, message: string): V1NodeCondition => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: since,
  });
  return [
    condition('Ready', 'True', 'KubeletReady', 'ffmpeg-operator test node agent is posting ready status'),
    condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'node agent has sufficient memory available'),
    condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'node agent has no disk pressure'),
    condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'node agent has sufficient PID available'),
  ];
}

async function reportNodeStatus(core: CoreV1Api, name: string, since: Date): Promise<void> {
  // Strategic merge: conditions merge by type, so other writers' conditions survive.
  await core.patchNodeStatus({ name, body: { status: { conditions: nodeConditions(since, new Date()) } } }, strategicMerge);
}

async function renewLease(coordination: CoordinationV1Api, nodeName: string, nodeUid: string | undefined): Promise<void> {
  const namespace = NODE_LEASE_NAMESPACE;
  try {
    await coordination.patchNamespacedLease(
      { name: nodeName, namespace, body: { spec: { holderIdentity: nodeName, renewTime: new V1MicroTime() } } },
      mergePatch,
    );
    return;
  } catch (err) {
    if (statusCode(err) !== 404) throw err;
  }
  await coordination.createNamespacedLease({
    namespace,
    body: {
      metadata: {
        name: nodeName,
        namespace,
        // As the kubelet does: the Lease goes away with its Node.
        ownerReferences: nodeUid ? [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUid }] : undefined,
      },
      spec: { holderIdentity: nodeName, leaseDurationSeconds: LEASE_DURATION_SECONDS, renewTime: new V1MicroTime() },
    },
  });
}

/** HTTP status of an ApiException (or undefined for network errors). */
export function statusCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}
