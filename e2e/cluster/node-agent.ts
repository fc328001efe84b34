// TEST STAND-IN FOR THE KUBELET. The test control plane (e2e/control-plane/) has no kubelet and no
// scheduler; this agent is the only piece of the cluster path that is not the real thing. It:
//   - registers a Ready Node and keeps its Lease fresh (node-heartbeat.ts);
//   - binds every unscheduled Pending pod to its node (pods/binding), as the scheduler would;
//   - runs each pod bound to its node as a local process (runnerCommand decides which program),
//     with the container's plain `env` values over a minimal PATH;
//   - reports pod status through pods/status the way the kubelet does (pod-status.ts), so the real
//     Job controller sees pods start and finish;
//   - on pod deletion (deletionTimestamp, or the object gone, e.g. the Job controller enforcing
//     activeDeadlineSeconds) kills the process group: SIGTERM, then SIGKILL after the grace period;
//     then reports the final status and removes the pod with gracePeriodSeconds 0.
// Only the pod's first container is run; init containers, probes, volumes and restarts are not.
import { KeepAliveKubeConfig } from '../../core/k8s/keep-alive-kubeconfig.ts';
import { spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { CoordinationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { sleep, startListWatch, type AgentLogger, type WatchEventType } from './list-watch.ts';
import { startNodeHeartbeat, statusCode } from './node-heartbeat.ts';
import {
  notStartedStatus,
  runningStatus,
  terminatedStatus,
  type ContainerInfo,
  type PodStatusPatch,
  type ProcessExit,
} from './pod-status.ts';

export interface RunnerCommand {
  program: string;
  args: string[];
  cwd?: string;
}

export interface NodeAgentOptions {
  kubeconfig: KubeConfig;
  nodeName: string;
  /** Watch pods of this namespace only (default: all namespaces). */
  namespace?: string;
  /** The local process for a pod, or null if this agent cannot run it (the pod then fails). */
  runnerCommand: (pod: V1Pod) => RunnerCommand | null;
  logger?: AgentLogger;
  /** Lease renewal interval (default 5000 ms). */
  heartbeatIntervalMs?: number;
  /** Reported as the Node's capacity and allocatable. */
  resources?: Record<string, string>;
}

export interface NodeAgent {
  nodeName: string;
  /** Pid of the process this agent started for a pod (also after it exited, until the pod is gone). */
  pidOf(podName: string, namespace?: string): number | undefined;
  /** Stops watching and heartbeats and kills every process it started (their pods are left as they are). */
  stop(): Promise<void>;
}

const DEFAULT_RESOURCES = { cpu: '64', memory: '256Gi', pods: '110', 'ephemeral-storage': '1Ti' };
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';
/** Grace period when neither the deletion nor the pod names one. */
const DEFAULT_GRACE_SECONDS = 5;
/** As the kubelet's termination message: at most 4 KiB, from the end of the output. */
const MESSAGE_BYTES = 4096;
/** Grace period for processes still running when the agent stops. */
const STOP_GRACE_MS = 2000;

const strategicMerge = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

/** One pod this agent started (or refused to start). */
interface PodRun {
  uid: string;
  name: string;
  namespace: string;
  container: ContainerInfo;
  pid?: number;
  stderr: OutputTail;
  startedAt: Date;
  exit?: ProcessExit;
  exited: Promise<void>;
  killTimer?: NodeJS.Timeout;
  killRequested: boolean;
  /** The pod object no longer exists: nothing to report. */
  gone: boolean;
  /** API writes for this pod, in order. */
  writes: Promise<void>;
}

export async function startNodeAgent(opts: NodeAgentOptions): Promise<NodeAgent> {
  const { kubeconfig, nodeName, namespace } = opts;
  const logger: AgentLogger = opts.logger ?? silentLogger;
  // Like the kubelet, which keeps its connection to the API server.
  const keptAlive = KeepAliveKubeConfig.of(kubeconfig);
  const core = keptAlive.makeApiClient(CoreV1Api);
  const coordination = keptAlive.makeApiClient(CoordinationV1Api);
  const stopping = new AbortController();
  const runs = new Map<string, PodRun>();
  /** Uids of pods with a bind or grace-0 delete in flight, so repeated events do not repeat it. */
  const binding = new Set<string>();
  const deleting = new Set<string>();

  const heartbeat = await startNodeHeartbeat({
    core,
    coordination,
    nodeName,
    logger,
    intervalMs: opts.heartbeatIntervalMs ?? 5000,
    resources: opts.resources ?? DEFAULT_RESOURCES,
  });

  const podsPath = namespace ? `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods` : '/api/v1/pods';
  const listPods = (fieldSelector: string) => () =>
    namespace ? core.listNamespacedPod({ namespace, fieldSelector }) : core.listPodForAllNamespaces({ fieldSelector });

  // ---------- API writes ----------

  /** Runs fn with a few retries; gives up on 404 (pod gone), 409 (bound elsewhere, other uid) or when the agent stops. */
  async function withRetries(what: string, pod: string, fn: () => Promise<unknown>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (stopping.signal.aborted) return;
      try {
        await fn();
        return;
      } catch (err) {
        const code = statusCode(err);
        if (code === 404 || code === 409 || attempt >= 6 || stopping.signal.aborted) {
          if (code !== 404) logger.warn({ pod, node: nodeName, code, err: String(err) }, `${what} failed`);
          return;
        }
        await sleep(100 * 2 ** attempt, stopping.signal);
      }
    }
  }

  function enqueue(run: PodRun, what: string, fn: () => Promise<unknown>): void {
    run.writes = run.writes.then(() => withRetries(what, `${run.namespace}/${run.name}`, fn));
  }

  function patchStatus(run: PodRun, body: PodStatusPatch): void {
    if (run.gone) return;
    enqueue(run, 'pod status update', () =>
      core.patchNamespacedPodStatus({ name: run.name, namespace: run.namespace, body }, strategicMerge),
    );
  }

  function deletePodNow(pod: { name: string; namespace: string; uid: string }, after: Promise<void>): void {
    if (deleting.has(pod.uid)) return;
    deleting.add(pod.uid);
    void after
      .then(() =>
        withRetries('pod removal', `${pod.namespace}/${pod.name}`, () =>
          core.deleteNamespacedPod({
            name: pod.name,
            namespace: pod.namespace,
            gracePeriodSeconds: 0,
            body: { gracePeriodSeconds: 0, preconditions: { uid: pod.uid } },
          }),
        ),
      )
      .finally(() => deleting.delete(pod.uid));
  }

  // ---------- scheduling ----------

  function bind(pod: V1Pod): void {
    const { name, namespace: ns, uid, deletionTimestamp } = pod.metadata ?? {};
    if (!name || !ns || !uid || deletionTimestamp || pod.spec?.nodeName) return;
    if (pod.status?.phase !== 'Pending' || binding.has(uid)) return;
    const scheduler = pod.spec?.schedulerName;
    if (scheduler && scheduler !== 'default-scheduler') return;
    binding.add(uid);
    void withRetries('pod binding', `${ns}/${name}`, () =>
      core.createNamespacedPodBinding({
        name,
        namespace: ns,
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name, namespace: ns, uid },
          target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
        },
      }),
    ).finally(() => binding.delete(uid));
  }

  // ---------- pods on this node ----------

  function syncPod(pod: V1Pod): void {
    const meta = pod.metadata;
    if (!meta?.uid || !meta.name || !meta.namespace || stopping.signal.aborted) return;
    const run = runs.get(meta.uid);
    if (meta.deletionTimestamp) {
      const ref = { name: meta.name, namespace: meta.namespace, uid: meta.uid };
      if (!run) return deletePodNow(ref, Promise.resolve());
      kill(run, graceSeconds(pod));
      deletePodNow(
        ref,
        run.exited.then(() => run.writes),
      );
      return;
    }
    if (run) return;
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return;
    if (phase === 'Running') return markLost(pod);
    start(pod);
  }

  function podGone(uid: string): void {
    const run = runs.get(uid);
    if (!run) return;
    run.gone = true;
    kill(run, DEFAULT_GRACE_SECONDS);
    void run.exited.then(() => runs.delete(uid));
  }

  function newRun(pod: V1Pod, pid?: number): PodRun {
    const spec = pod.spec?.containers?.[0];
    return {
      uid: pod.metadata!.uid!,
      name: pod.metadata!.name!,
      namespace: pod.metadata!.namespace!,
      container: { name: spec?.name ?? '', image: spec?.image ?? '', containerId: pid ? `ffop-node-agent://${pid}` : '' },
      pid,
      stderr: new OutputTail(MESSAGE_BYTES),
      startedAt: new Date(),
      exited: Promise.resolve(),
      killRequested: false,
      gone: false,
      writes: Promise.resolve(),
    };
  }

  function start(pod: V1Pod): void {
    const container = pod.spec?.containers?.[0];
    let command: RunnerCommand | null = null;
    let refusal = 'the node agent has no runner for this pod';
    try {
      command = container ? opts.runnerCommand(pod) : null;
    } catch (err) {
      refusal = `the node agent could not choose a runner: ${String(err)}`;
    }
    if (!command || !container) {
      const run = newRun(pod);
      runs.set(run.uid, run);
      logger.warn({ pod: `${run.namespace}/${run.name}`, node: nodeName }, refusal);
      patchStatus(run, notStartedStatus(run.uid, run.container, 'UnsupportedPod', refusal));
      return;
    }

    const env: Record<string, string> = { PATH: process.env.PATH || DEFAULT_PATH };
    for (const entry of container.env ?? []) {
      if (entry.valueFrom === undefined) env[entry.name] = entry.value ?? '';
    }
    // Its own process group, so that a kill reaches everything it started, as a container's would.
    const child = spawn(command.program, command.args, {
      cwd: command.cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run = newRun(pod, child.pid);
    runs.set(run.uid, run);
    const label = `${run.namespace}/${run.name}`;

    run.exited = new Promise<void>((resolve) => {
      const finish = (exit: Omit<ProcessExit, 'startedAt' | 'finishedAt'>) => {
        if (run.exit) return;
        clearTimeout(run.killTimer);
        run.exit = { ...exit, startedAt: run.startedAt, finishedAt: new Date() };
        logger.info({ pod: label, node: nodeName, processId: run.pid, exitCode: exit.exitCode }, 'pod process exited');
        patchStatus(run, terminatedStatus(run.uid, run.container, run.exit));
        resolve();
      };
      child.on('error', (err) => {
        if (run.pid === undefined)
          finish({ exitCode: 128, reason: 'StartError', message: `cannot start ${command.program}: ${err.message}` });
      });
      // The main process is done: take its leftovers with it, as a container's teardown would.
      child.on('exit', () => signalGroup(run.pid, 'SIGKILL'));
      // 'close' comes after the output pipes are drained, so the message has the last words.
      child.on('close', (code, signal) => {
        const exitCode = code ?? 128 + (signal ? osConstants.signals[signal] : 0);
        finish({
          exitCode,
          signal: signal ? osConstants.signals[signal] : undefined,
          reason: exitCode === 0 ? 'Completed' : 'Error',
          message: run.stderr.text(),
        });
      });
    });
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => run.stderr.push(chunk));

    if (run.pid !== undefined) {
      logger.info({ pod: label, node: nodeName, processId: run.pid }, 'pod process started');
      patchStatus(run, runningStatus(run.uid, run.container, run.startedAt));
    }
  }

  /** A pod Running from an earlier agent: its process is not ours to find, so report it lost. */
  function markLost(pod: V1Pod): void {
    const run = newRun(pod);
    run.container.containerId = pod.status?.containerStatuses?.[0]?.containerID ?? '';
    runs.set(run.uid, run);
    const now = new Date();
    run.exit = {
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      message: 'The container could not be located when the pod was terminated',
      startedAt: now,
      finishedAt: now,
    };
    patchStatus(run, terminatedStatus(run.uid, run.container, run.exit));
  }

  function kill(run: PodRun, grace: number): void {
    if (run.killRequested || run.exit) return;
    run.killRequested = true;
    logger.info({ pod: `${run.namespace}/${run.name}`, node: nodeName, processId: run.pid, grace }, 'killing pod process');
    signalGroup(run.pid, 'SIGTERM');
    run.killTimer = setTimeout(() => signalGroup(run.pid, 'SIGKILL'), grace * 1000);
  }

  // ---------- watches ----------

  const unscheduled = startListWatch<V1Pod>({
    kubeconfig,
    logger,
    path: podsPath,
    fieldSelector: 'spec.nodeName=',
    list: listPods('spec.nodeName='),
    onList: (pods) => pods.forEach(bind),
    onEvent: (type, pod) => {
      if (type !== 'DELETED') bind(pod);
    },
  });

  const onThisNode = `spec.nodeName=${nodeName}`;
  const assigned = startListWatch<V1Pod>({
    kubeconfig,
    logger,
    path: podsPath,
    fieldSelector: onThisNode,
    list: listPods(onThisNode),
    onList(pods) {
      const present = new Set(pods.map((p) => p.metadata?.uid));
      for (const uid of runs.keys()) if (!present.has(uid)) podGone(uid);
      pods.forEach(syncPod);
    },
    onEvent(type: WatchEventType, pod: V1Pod) {
      if (type === 'DELETED') podGone(pod.metadata?.uid ?? '');
      else syncPod(pod);
    },
  });

  return {
    nodeName,
    pidOf(podName, ns) {
      for (const run of runs.values()) {
        if (run.name === podName && (ns === undefined || run.namespace === ns)) return run.pid;
      }
      return undefined;
    },
    async stop() {
      stopping.abort();
      await Promise.all([unscheduled.stop(), assigned.stop(), heartbeat.stop()]);
      const all = [...runs.values()].filter((run) => !run.exit);
      for (const run of all) {
        clearTimeout(run.killTimer);
        signalGroup(run.pid, 'SIGTERM');
        run.killTimer = setTimeout(() => signalGroup(run.pid, 'SIGKILL'), STOP_GRACE_MS);
      }
      await Promise.all(all.map((run) => run.exited));
      runs.clear();
    },
  };
}

/** Seconds between SIGTERM and SIGKILL: what the deletion asked for, else the pod's own setting. */
function graceSeconds(pod: V1Pod): number {
  return pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** Keeps the last `limit` bytes written. */
class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;
  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - this.chunks[0].length >= this.limit) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8');
  }
}

const silentLogger: AgentLogger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
