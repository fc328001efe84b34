// Cluster mode's job backend: each step is a Kubernetes Job (server-side apply, deterministic name,
// owned by its FfmpegCommand). Runner events reach the database through the API (runner pods have
// no database access) and are read here in order; a Job that ends without a result (deadline, pod
// failure, a runner that crashed) gets a result made from the Job's own status.
import {
  BatchV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type V1Job,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { DEFAULT_MEMORY_BYTES } from '../core/confine/limits.ts';
import { DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_OUTPUT_FILES } from '../core/jobs/step-spec.ts';
import { POD_FALLBACK, POD_WORK_ROOT, runnerEnv, type RunnerConfinementMode } from '../core/jobs/runner-contract.ts';
import type { Logger } from 'pino';
import { ErrorStatus } from '../core/commands/error-status.ts';
import type { JobEventsRepo } from '../core/jobs/job-events-repo.ts';
import { jobToken } from '../core/jobs/job-token.ts';
import type { RunnerEvent } from '../core/jobs/step-spec.ts';
import { LABELS, MANAGED_BY, RUNNER_CONTAINER, SERVICE_ACCOUNTS } from '../core/k8s/names.ts';
import { keepInformer, type KeptInformer } from './cluster/watch.ts';
import {
  parseJobName,
  type BackendEvent,
  type JobBackend,
  type JobListener,
  type JobRef,
  type JobRequest,
} from '../core/engine/job-backend.ts';
import type { QueueingConfig, Toleration } from '../core/cluster-config.ts';
import { ProcessingStage } from '../core/jobs/step-spec.ts';
import { PodRoomGate, type ReleasedStep } from './queueing/release-gate.ts';
import { eligibleNodes, unfitReason } from './queueing/node-room.ts';
import { bytesQuantity, parseQuantity } from './queueing/quantity.ts';
import { describeTimeline } from './step-timeline.ts';
import type { DatabaseHealth } from '../core/db/database-health.ts';

/**
 * How steps wait for the cluster (queueing.mode). builtin: the operator makes a step's Job when the
 * cluster shows room (release-gate.ts). kueue: every Job is made suspended, labelled for Kueue's
 * LocalQueue, and Kueue resumes it.
 */
export type QueueingSettings = QueueingConfig;

type JobOwner = { name: string; uid: string; apiVersion: string; kind: string };

export interface KubernetesBackendOptions {
  kubeconfig: KubeConfig;
  namespace: string;
  events: JobEventsRepo;
  logger: Logger;
  /** While the database cannot be reached, event reads wait for it (no read, no log line, each poll). */
  health?: Pick<DatabaseHealth, 'up' | 'failed'>;
  runnerImage: string;
  /** The API's job-events endpoint as runner pods reach it. */
  reportUrl: string;
  tokenSecret: string;
  /** The FfmpegCommand that owns a command's Jobs (for ownerReferences and garbage collection). */
  ownerOf: (commandId: string) => JobOwner | null | Promise<JobOwner | null>;
  ttlSecondsAfterFinished?: number;
  /** Runner events are read on every notification of a new one (watchEvents), and every pollMs in any case. */
  pollMs?: number;
  /** Calls `onNew` whenever a runner event was stored (the database's NOTIFY); resolves to a stop function. */
  watchEvents?: (onNew: () => void) => Promise<() => Promise<void>>;
  /** Where the runner's working volume is mounted (default POD_WORK_ROOT, /work). */
  workRoot?: string;
  /** Disk a step may use: its working volume's size limit and the pod's ephemeral-storage limit (default 100Gi). */
  workVolumeSize?: string;
  /** rlimit on every file ffmpeg writes (default 20 GiB). */
  maxOutputFileBytes?: number;
  /** Most files one playlist or OUTPUT_FOLDER output may hold (FFOP_MAX_OUTPUT_FILES). */
  maxOutputFiles?: number;
  /** ffmpeg's and ffprobe's address-space rlimit in the pod (FFOP_MAX_MEMORY_BYTES). */
  maxMemoryBytes?: number;
  /** The runner container's memory limit (FFOP_RUNNER_MEMORY_LIMIT); default the rlimit + 512Mi. */
  podMemoryLimit?: string;
  /** 'bwrap' requires bubblewrap in the pod; 'bwrap-or-pod' (default) lets the pod be the boundary where it cannot run. */
  runnerConfinement?: RunnerConfinementMode;
  /** Where runner pods may run (FFOP_RUNNER_NODE_SELECTOR, FFOP_RUNNER_TOLERATIONS, FFOP_RUNNER_PRIORITY_CLASS). */
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  priorityClassName?: string;
  /** FFOP_RUNNER_HOST_NETWORK: runner pods use the node's network (single-node test clusters). */
  hostNetwork?: boolean;
  /** How steps wait for room (default: builtin, 10 pending pods, no vCPU cap, requeue after 10 s, retry after 30 s). */
  queueing?: QueueingSettings;
  /** Disk a step asks for when scheduled (ephemeral-storage request; default 10Gi): the limit stays the guard. */
  diskRequest?: string;
}

export const DEFAULT_QUEUEING: QueueingSettings = {
  mode: 'builtin',
  maxPendingPods: 10,
  maxVcpus: null,
  requeueAfterSeconds: 10,
  retrySeconds: 30,
};
export const DEFAULT_DISK_REQUEST = '10Gi';
/** The most a step may write when FFOP_RUNNER_DISK_LIMIT is not set. */
export const DEFAULT_DISK_LIMIT = '100Gi';
/** A step's known inputs are asked for this many times over: the inputs, the outputs and room to spare. */
const DISK_PER_INPUT_BYTE = 3;
/** Kueue's labels on a Job. */
export const KUEUE_LABELS = { queueName: 'kueue.x-k8s.io/queue-name', priorityClass: 'kueue.x-k8s.io/priority-class' };

const FIELD_MANAGER = 'ffmpeg-operator';
const EVENT_LOOKBACK = 200;

export class KubernetesBackend implements JobBackend {
  readonly capacityVcpus = null; // the scheduler decides where and when pods run
  readonly releaseGate: PodRoomGate | undefined;
  readonly queuesInCluster: boolean;
  /** Kueue mode: Jobs seen resumed (reported released); one suspended again is reported and leaves. */
  private readonly resumed = new Set<string>();
  private pods: KeptInformer<V1Pod> | null = null;
  private nodes: KeptInformer<V1Node> | null = null;
  private gateTimer: NodeJS.Timeout | null = null;
  /** Pods bound to a node, by uid: when one ends or goes, room may have freed. */
  private readonly placedPods = new Set<string>();
  /** What each node offers, to notice a node that changed. */
  private readonly nodeShapes = new Map<string, string>();
  /** The stages each running Job's runner reported, with when: for a deadline's message. */
  private readonly stageTimes = new Map<string, { stage: ProcessingStage; at: Date }[]>();
  private readonly options: KubernetesBackendOptions;
  private readonly listeners: JobListener[] = [];
  private readonly objects: KubernetesObjectApi;
  private readonly batch: BatchV1Api;
  private readonly core: CoreV1Api;
  private jobs: KeptInformer<V1Job> | null = null;
  private lastEventId = 0;
  private poller: NodeJS.Timeout | null = null;
  private polling: Promise<void> = Promise.resolve();
  /** A read of events is queued behind the running one: more requests join it. */
  private pollQueued = false;
  private closed = false;
  private stopEventWatch: () => Promise<void> = async () => {};
  /** Jobs whose result was emitted (real or made from status): nothing more is emitted for them. */
  private readonly settled = new Set<string>();
  /** Jobs created here that the watch has not shown yet: they exist, whatever the cache says. */
  private readonly created = new Set<string>();
  /** Event ids already read: ids can commit out of order, so each poll looks a little way back. */
  private readonly seenEvents = new Set<number>();

  constructor(o: KubernetesBackendOptions) {
    this.options = o;
    this.objects = KubernetesObjectApi.makeApiClient(o.kubeconfig);
    this.batch = o.kubeconfig.makeApiClient(BatchV1Api);
    this.core = o.kubeconfig.makeApiClient(CoreV1Api);
    const queueing = o.queueing ?? DEFAULT_QUEUEING;
    this.queuesInCluster = queueing.mode === 'kueue';
    if (queueing.mode === 'builtin') {
      this.releaseGate = new PodRoomGate({
        maxPendingPods: queueing.maxPendingPods,
        maxVcpus: queueing.maxVcpus,
        requeueAfterMs: queueing.requeueAfterSeconds * 1000,
        retryMs: queueing.retrySeconds * 1000,
        released: () => this.releasedSteps(),
        requeue: (name, reason) => {
          const ref = parseJobName(name);
          if (ref) for (const l of this.listeners) l(ref, { type: 'requeue', reason });
        },
      });
    }
  }

  /** Lists and watches Jobs, then starts reading runner events. Call before the reconciler starts. */
  async start(): Promise<void> {
    const selector = `${LABELS.managedBy}=${MANAGED_BY}`;
    this.jobs = keepInformer<V1Job>(
      this.options.kubeconfig,
      `/apis/batch/v1/namespaces/${this.options.namespace}/jobs`,
      () => this.batch.listNamespacedJob({ namespace: this.options.namespace, labelSelector: selector }),
      selector,
      this.options.logger,
    );
    this.jobs.informer.on('update', (job) => this.jobChanged(job));
    // Forget a Job once it is gone for good (its late updates are still ignored until then).
    this.jobs.informer.on('delete', (job) => {
      this.settled.delete(job.metadata!.name!);
      this.resumed.delete(job.metadata!.name!);
    });
    this.jobs.informer.on('add', (job) => {
      this.created.delete(job.metadata!.name!);
      this.jobChanged(job);
    });
    this.watchPods(selector);
    this.watchNodes();
    await Promise.all([this.jobs.synced, this.pods!.synced]);
    if (this.releaseGate) {
      this.gateTimer = setInterval(() => this.releaseGate!.tick(), 1000);
      this.gateTimer.unref();
    }
    if (this.options.watchEvents) this.stopEventWatch = await this.options.watchEvents(() => this.poll());
    this.poller = setInterval(() => this.poll(), this.options.pollMs ?? 250);
    this.poller.unref();
    this.poll();
  }

  subscribe(listener: JobListener): void {
    this.listeners.push(listener);
  }

  async listJobNames(): Promise<Set<string>> {
    // Before the first list, "no Jobs" would be a lie that makes every running step look lost.
    if (!this.jobs) throw new Error('the Job watch has not started yet');
    await this.jobs.synced;
    const names = new Set(this.jobs.informer.list(this.options.namespace).map((j) => j.metadata!.name!));
    for (const name of this.created) names.add(name);
    return names;
  }

  async ensureJob(request: JobRequest): Promise<void> {
    if (this.created.has(request.ref.name) || this.jobs?.informer.get(request.ref.name, this.options.namespace)) return;
    const owner = await this.options.ownerOf(request.ref.commandId);
    const labels = {
      [LABELS.managedBy]: MANAGED_BY,
      [LABELS.commandId]: request.ref.commandId,
      [LABELS.step]: String(request.ref.step),
      [LABELS.account]: request.accountId,
    };
    const queueing = this.options.queueing ?? DEFAULT_QUEUEING;
    // Kueue finds the Job by its queue label and resumes it when its ClusterQueue admits it.
    const kueueLabels: Record<string, string> = {};
    if (queueing.mode === 'kueue') {
      kueueLabels[KUEUE_LABELS.queueName] = queueing.queueName;
      const priorityClass = request.plan === undefined ? undefined : queueing.priorityClasses[request.plan];
      if (priorityClass) kueueLabels[KUEUE_LABELS.priorityClass] = priorityClass;
    }
    const cpu = String(request.vcpus);
    const memoryLimit = this.memoryLimit();
    const disk = this.diskOf(request);
    const job: V1Job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: request.ref.name,
        namespace: this.options.namespace,
        labels: { ...labels, ...kueueLabels },
        ownerReferences: owner ? [{ ...owner, controller: true, blockOwnerDeletion: true }] : undefined,
      },
      spec: {
        // With Kueue the Job waits suspended: its deadline counts only from when Kueue resumes it.
        ...(queueing.mode === 'kueue' ? { suspend: true } : {}),
        backoffLimit: 0,
        // A pod lost to its node (drain, eviction, preemption, the node gone) fails the Job at once
        // with this rule's reason, and the step runs again as its next attempt (reconciler.ts); a
        // runner or ffmpeg that fails on its own is never run again.
        podFailurePolicy: { rules: [{ action: 'FailJob', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }] },
        activeDeadlineSeconds: request.deadlineSeconds,
        ttlSecondsAfterFinished: this.options.ttlSecondsAfterFinished ?? 3600,
        template: {
          metadata: { labels },
          spec: {
            restartPolicy: 'Never',
            serviceAccountName: SERVICE_ACCOUNTS.runner,
            automountServiceAccountToken: false,
            nodeSelector: this.options.nodeSelector,
            tolerations: this.options.tolerations,
            priorityClassName: this.options.priorityClassName,
            // On the node's network a pod still resolves the API's Service name only with this DNS policy.
            ...(this.options.hostNetwork ? { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' } : {}),
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 10001,
              runAsGroup: 10001,
              fsGroup: 10001,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: RUNNER_CONTAINER,
                image: this.options.runnerImage,
                env: Object.entries(
                  runnerEnv({
                    spec: request.spec,
                    reportUrl: this.options.reportUrl,
                    reportToken: jobToken(this.options.tokenSecret, request.ref.name),
                    jobName: request.ref.name,
                    workRoot: this.options.workRoot ?? POD_WORK_ROOT,
                    maxOutputFileBytes: this.options.maxOutputFileBytes ?? DEFAULT_MAX_OUTPUT_FILE_BYTES,
                    maxOutputFiles: this.options.maxOutputFiles ?? DEFAULT_MAX_OUTPUT_FILES,
                    maxMemoryBytes: this.options.maxMemoryBytes ?? DEFAULT_MEMORY_BYTES,
                    // Named in the step's error when the kernel kills ffmpeg for going over it.
                    podMemoryLimit: memoryLimit,
                    confinement: this.options.runnerConfinement ?? POD_FALLBACK,
                  }),
                ).map(([name, value]) => ({ name, value })),
                resources: {
                  // Scheduling goes by the request (sized from what the step can know); the limit is the guard.
                  requests: { cpu, memory: memoryLimit, 'ephemeral-storage': disk.request },
                  limits: { cpu, memory: memoryLimit, 'ephemeral-storage': disk.limit },
                },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                  // RuntimeDefault refuses the namespaces bubblewrap needs (checked with containerd 1.6's
                  // profile); with 'bwrap' the runner goes without it and ffmpeg gets our own filter.
                  ...(this.options.runnerConfinement === 'bwrap' ? { seccompProfile: { type: 'Unconfined' } } : {}),
                },
                volumeMounts: [{ name: 'work', mountPath: this.options.workRoot ?? POD_WORK_ROOT }],
              },
            ],
            volumes: [{ name: 'work', emptyDir: { sizeLimit: disk.limit } }],
          },
        },
      },
    };
    // Server-side apply: creating an existing Job again changes nothing.
    await this.objects.patch(job, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
    if (!this.jobs?.informer.get(request.ref.name, this.options.namespace)) this.created.add(request.ref.name);
    this.options.logger.info(
      { command_id: request.ref.commandId, job: request.ref.name, vcpus: request.vcpus, disk_request: disk.request },
      queueing.mode === 'kueue' ? 'job created (suspended, for Kueue)' : 'job created',
    );
  }

  /** The runner container's memory: ffmpeg's own rlimit plus room for the runner (Node) itself. */
  private memoryLimit(): string {
    return this.options.podMemoryLimit ?? `${Math.ceil((this.options.maxMemoryBytes ?? DEFAULT_MEMORY_BYTES) / 1024 ** 2) + 512}Mi`;
  }

  /** The step's disk: asked for as much as its known inputs need (at least the default), never more than the limit. */
  private diskOf(request: Pick<JobRequest, 'knownInputBytes'>): { request: string; limit: string } {
    const limit = this.options.workVolumeSize ?? DEFAULT_DISK_LIMIT;
    const base = this.options.diskRequest ?? DEFAULT_DISK_REQUEST;
    const limitBytes = parseQuantity(limit) ?? Infinity;
    const wanted = (request.knownInputBytes ?? 0) * DISK_PER_INPUT_BYTE;
    if (wanted <= (parseQuantity(base) ?? 0)) return { request: (parseQuantity(base) ?? 0) > limitBytes ? limit : base, limit };
    return { request: wanted >= limitBytes ? limit : bytesQuantity(wanted), limit };
  }

  /** Why this step fits no node the runner may use, or null (also while nodes are not known). */
  unfit(request: Pick<JobRequest, 'vcpus' | 'knownInputBytes'>): string | null {
    const nodes = this.nodes?.informer.list() ?? [];
    const ask = {
      cpu: request.vcpus,
      memory: parseQuantity(this.memoryLimit()) ?? 0,
      disk: parseQuantity(this.diskOf(request).request) ?? 0,
    };
    return unfitReason(ask, eligibleNodes(nodes, this.options.nodeSelector));
  }

  maxStepVcpus(): number | null {
    const nodes = eligibleNodes(this.nodes?.informer.list() ?? [], this.options.nodeSelector);
    if (nodes.length === 0) return null;
    return Math.max(...nodes.map((n) => parseQuantity(n.status?.allocatable?.cpu) ?? 0));
  }

  /** Released steps for the gate: our Jobs not finished nor suspended, with what their pods say. */
  private releasedSteps(): ReleasedStep[] {
    const podsByJob = new Map<string, V1Pod>();
    for (const pod of this.pods?.informer.list(this.options.namespace) ?? []) {
      const job = pod.metadata?.labels?.['job-name'];
      if (job && !pod.metadata?.deletionTimestamp) podsByJob.set(job, pod);
    }
    const steps: ReleasedStep[] = [];
    const seen = new Set<string>();
    for (const job of this.jobs?.informer.list(this.options.namespace) ?? []) {
      const name = job.metadata!.name!;
      seen.add(name);
      if (job.spec?.suspend || job.metadata?.deletionTimestamp || finishedCondition(job)) continue;
      steps.push(stepOf(name, podsByJob.get(name)));
    }
    // Made here a moment ago, not yet seen by the watch: waiting for their pods.
    for (const name of this.created) if (!seen.has(name)) steps.push({ jobName: name, placed: false, unschedulable: null });
    return steps;
  }

  /** Runner pods, trimmed to what the gate and failure messages read (their env holds the whole step). */
  private watchPods(selector: string): void {
    this.pods = keepInformer<V1Pod>(
      this.options.kubeconfig,
      `/api/v1/namespaces/${this.options.namespace}/pods`,
      () => this.core.listNamespacedPod({ namespace: this.options.namespace, labelSelector: selector }),
      selector,
      this.options.logger,
      trimPod,
    );
    const changed = (pod: V1Pod, gone: boolean) => {
      const uid = pod.metadata?.uid ?? '';
      const ended = gone || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
      if (!ended && pod.spec?.nodeName && !this.placedPods.has(uid)) {
        // Bound to a node: it waits no more, so one more step may be released.
        this.placedPods.add(uid);
        this.releaseGate?.podPlaced();
      } else if (ended && this.placedPods.delete(uid)) {
        this.releaseGate?.podEnded();
      }
    };
    this.pods.informer.on('add', (pod) => changed(pod, false));
    this.pods.informer.on('update', (pod) => changed(pod, false));
    this.pods.informer.on('delete', (pod) => changed(pod, true));
  }

  /**
   * Nodes, for the size of the largest (a step larger than every node fails at once) and to notice room
   * that came (a node added, uncordoned, grown). Needs list/watch on nodes (the chart's ClusterRole);
   * without it the watch retries and no step is refused for its size.
   */
  private watchNodes(): void {
    this.nodes = keepInformer<V1Node>(
      this.options.kubeconfig,
      '/api/v1/nodes',
      () => this.core.listNode(),
      undefined,
      this.options.logger,
      trimNode,
    );
    const changed = (node: V1Node) => {
      const shape = JSON.stringify([node.status?.allocatable, node.spec?.unschedulable, node.spec?.taints, readyOf(node)]);
      const name = node.metadata?.name ?? '';
      if (this.nodeShapes.get(name) === shape) return;
      this.nodeShapes.set(name, shape);
      this.releaseGate?.roomMayHaveFreed();
    };
    this.nodes.informer.on('add', changed);
    this.nodes.informer.on('update', changed);
    this.nodes.informer.on('delete', (node) => this.nodeShapes.delete(node.metadata?.name ?? ''));
  }

  async deleteJob(name: string): Promise<void> {
    this.created.delete(name);
    try {
      await this.batch.deleteNamespacedJob({ name, namespace: this.options.namespace, propagationPolicy: 'Background' });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
    await this.options.events.deleteForJobs([name]);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    if (this.gateTimer) clearInterval(this.gateTimer);
    await this.pods?.stop();
    await this.nodes?.stop();
    await this.stopEventWatch();
    await this.polling;
    await this.jobs?.stop();
  }

  private poll(): void {
    if (this.pollQueued || (this.options.health && !this.options.health.up)) return;
    this.pollQueued = true;
    this.polling = this.polling
      .then(async () => {
        this.pollQueued = false;
        for (const e of await this.options.events.after(Math.max(0, this.lastEventId - EVENT_LOOKBACK))) {
          if (this.seenEvents.has(e.id)) continue;
          this.seenEvents.add(e.id);
          this.lastEventId = Math.max(this.lastEventId, e.id);
          const ref = parseJobName(e.jobName);
          if (ref) this.emit(ref, e.event);
        }
        for (const id of this.seenEvents) if (id < this.lastEventId - EVENT_LOOKBACK) this.seenEvents.delete(id);
      })
      .catch((err) => {
        if (!this.options.health?.failed(err)) this.options.logger.warn({ err }, 'reading job events failed; retrying');
      });
  }

  private emit(ref: JobRef, event: RunnerEvent | BackendEvent): void {
    if (this.settled.has(ref.name)) return;
    if (event.type === 'stage')
      this.stageTimes.set(ref.name, [...(this.stageTimes.get(ref.name) ?? []), { stage: event.stage, at: new Date() }]);
    if (event.type === 'result' || event.type === 'lost') {
      this.settled.add(ref.name);
      this.stageTimes.delete(ref.name);
    }
    for (const l of this.listeners) l(ref, event);
  }

  /** A finished Job without a delivered result: make one from what Kubernetes says. */
  /** A failed read (the database away for a moment) is tried again: a finished Job changes no more, so no later event would. */
  private jobChanged(job: V1Job): void {
    this.onJobChanged(job).catch((err: unknown) => {
      if (this.closed) return;
      if (!this.options.health?.failed(err))
        this.options.logger.warn({ job: job.metadata?.name, err: (err as Error).message }, 'could not settle a finished Job; trying again');
      setTimeout(() => this.jobChanged(job), 1000).unref();
    });
  }

  private async onJobChanged(job: V1Job): Promise<void> {
    const name = job.metadata?.name ?? '';
    const ref = parseJobName(name);
    if (ref && this.queuesInCluster) this.followClusterQueue(ref, job);
    const finished = job.status?.conditions?.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
    if (!ref || !finished || this.settled.has(name)) return;
    // The runner reports its result before it exits: read events first, so a real result wins.
    await new Promise<void>((resolve) => {
      this.poll();
      void this.polling.then(resolve);
    });
    if (this.settled.has(name)) return;
    const reported = (await this.options.events.forJob(name)).find((e) => e.event.type === 'result');
    if (reported) {
      this.emit(ref, reported.event); // the poller may have passed it by (ids commit out of order)
      return;
    }
    if (finished.reason === 'PodFailurePolicy') {
      this.emit(ref, { type: 'lost', reason: await this.disruptionOf(job, finished.message) });
      return;
    }
    const failure = await this.describeFailure(job, finished.type, finished.reason, finished.message);
    this.emit(ref, { type: 'result', ok: false, ffmpegSeconds: null, inputBytes: 0, ...failure });
  }

  /** Kueue mode: reports a Job Kueue resumed (the step runs), and one it suspended again (preempted, evicted). */
  private followClusterQueue(ref: JobRef, job: V1Job): void {
    if (this.settled.has(ref.name) || finishedCondition(job) || job.metadata?.deletionTimestamp) return;
    if (!job.spec?.suspend && !this.resumed.has(ref.name)) {
      this.resumed.add(ref.name);
      this.emit(ref, { type: 'released' });
    } else if (job.spec?.suspend && this.resumed.delete(ref.name)) {
      const suspended = job.status?.conditions?.find((c) => c.type === 'Suspended' && c.status === 'True');
      this.emit(ref, { type: 'suspended', reason: `Kueue suspended its Job again${suspended?.message ? ` (${suspended.message})` : ''}` });
      // Its next pod may start long after: its token's lifetime counts from that pod's first report.
      this.options.events
        .forgetReports(ref.name)
        .catch((err: unknown) => this.options.logger.warn({ err, job: ref.name }, 'could not forget the reports of a suspended Job'));
    }
  }

  /** What took the pod away (its DisruptionTarget condition: drained, evicted, preempted, node gone). */
  private async disruptionOf(job: V1Job, jobMessage?: string): Promise<string> {
    const pod = this.podOf(job.metadata!.name!);
    const condition = pod?.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
    const node = pod?.spec?.nodeName ? ` on node ${pod.spec.nodeName}` : '';
    if (condition)
      return `its pod was lost${node}: ${condition.reason ?? 'disrupted'}${condition.message ? ` (${condition.message})` : ''}`;
    return `its pod was lost${node}: ${jobMessage ?? 'disrupted'}`;
  }

  private podOf(jobName: string): V1Pod | undefined {
    return this.pods?.informer.list(this.options.namespace).find((p) => p.metadata?.labels?.['job-name'] === jobName);
  }

  private async describeFailure(
    job: V1Job,
    type: string,
    reason?: string,
    message?: string,
  ): Promise<{ errorStatus: ErrorStatus; errorMessage: string }> {
    if (reason === 'DeadlineExceeded') {
      const name = job.metadata!.name!;
      const pod = this.podOf(name);
      const container = pod?.status?.containerStatuses?.[0]?.state;
      const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'True');
      const ended = job.status?.conditions?.find((c) => c.type === 'Failed')?.lastTransitionTime;
      const spent = describeTimeline({
        jobStart: dateOf(job.status?.startTime),
        scheduledAt: dateOf(scheduled?.lastTransitionTime),
        containerStartedAt: dateOf(container?.running?.startedAt ?? container?.terminated?.startedAt),
        stages: this.stageTimes.get(name) ?? [],
        end: dateOf(ended) ?? new Date(),
      });
      return {
        errorStatus: ErrorStatus.DEADLINE_EXCEEDED,
        errorMessage:
          `the step's Job ran longer than its deadline of ${job.spec?.activeDeadlineSeconds} s ` +
          `(downloads, ffmpeg and uploads together) and was stopped: ${spent}`,
      };
    }
    let detail = message ?? reason ?? type;
    try {
      const pods = await this.core.listNamespacedPod({
        namespace: this.options.namespace,
        labelSelector: `job-name=${job.metadata!.name}`,
      });
      const terminated = pods.items
        .flatMap((p) => p.status?.containerStatuses ?? [])
        .map((s) => s.state?.terminated)
        .find(Boolean);
      if (terminated?.reason === 'OOMKilled') {
        const limit = job.spec?.template.spec?.containers[0]?.resources?.limits?.memory;
        return {
          errorStatus: ErrorStatus.FFMPEG_FAILED,
          errorMessage:
            `the step went over its memory limit of ${limit} ` +
            "(the runner pod's limit, FFOP_RUNNER_MEMORY_LIMIT) and its runner was killed",
        };
      }
      if (terminated)
        detail =
          `the runner exited with code ${terminated.exitCode}` +
          `${terminated.message ? `: ${terminated.message.trim().slice(-1000)}` : ''}`;
    } catch {
      /* keep the Job's own words */
    }
    return { errorStatus: ErrorStatus.INTERNAL_ERROR, errorMessage: `the step's pod failed without a result: ${detail}` };
  }
}

function finishedCondition(job: V1Job) {
  return job.status?.conditions?.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
}

/** A released step as its pod shows it: bound to a node (or ended), or refused by the scheduler. */
function stepOf(jobName: string, pod: V1Pod | undefined): ReleasedStep {
  if (!pod) return { jobName, placed: false, unschedulable: null };
  const phase = pod.status?.phase;
  if (pod.spec?.nodeName || phase === 'Succeeded' || phase === 'Failed') return { jobName, placed: true, unschedulable: null };
  const refused = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable');
  return { jobName, placed: false, unschedulable: refused ? (refused.message ?? 'Unschedulable') : null };
}

function readyOf(node: V1Node): string | undefined {
  return node.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

function dateOf(value: Date | string | undefined): Date | null {
  if (value === undefined) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** Keeps what the gate and failure messages read of a runner pod; its spec (the step in env) goes. */
function trimPod(pod: V1Pod): void {
  const nodeName = pod.spec?.nodeName;
  pod.spec = { nodeName, containers: [] };
  delete pod.metadata?.managedFields;
}

/** Keeps a node's size, schedulability and readiness. */
function trimNode(node: V1Node): void {
  delete node.metadata?.managedFields;
  delete node.metadata?.annotations;
  if (node.status)
    node.status = { allocatable: node.status.allocatable, conditions: node.status.conditions?.filter((c) => c.type === 'Ready') };
}
