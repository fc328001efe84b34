// Cluster mode's operator: the same reconciler as embedded mode, with the Kubernetes job backend,
// FfmpegCommand resources (created when missing, cancelled when deleted, status mirrored) and
// leader election, so only one replica acts.
import { DEFAULT_OUTPUT_MULTIPART, type OutputMultipartSettings } from '../core/jobs/output-parts.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { COMMAND_CANCEL_CHANNEL, CommandsRepo } from '../core/commands/commands-repo.ts';
import type { Database } from '../core/db/database.ts';
import { JOB_EVENT_CHANNEL, JobEventsRepo } from '../core/jobs/job-events-repo.ts';
import { LEADER_LEASE } from '../core/k8s/names.ts';
import { KeepAliveKubeConfig } from '../core/k8s/keep-alive-kubeconfig.ts';
import type { Storage } from '../core/storage/storage.ts';
import { DEFAULT_DISK_LIMIT, KubernetesBackend, type KubernetesBackendOptions, type QueueingSettings } from './kubernetes-backend.ts';
import { parseQuantity } from './queueing/quantity.ts';
import { CommandEvents } from './cluster/command-events.ts';
import { CommandResources } from './cluster/command-resources.ts';
import { CommandIntake, namespaceLabelsFrom } from './cluster/command-intake.ts';
import { outputOf } from './cluster/command-status.ts';
import { AccountsRepo } from '../core/accounts/accounts-repo.ts';
import { Quotas } from '../core/accounts/quotas.ts';
import { insertSubmitted } from '../core/commands/ended-at-submit.ts';
import { FilesRepo } from '../core/files/files-repo.ts';
import { electLeader } from './cluster/leader-election.ts';
import { createEngine, type Engine, type EngineSettings } from '../core/engine/engine.ts';
import type { FileProber } from '../core/media/file-prober.ts';
import type { Reconciler } from '../core/engine/reconciler.ts';
import type { Metrics } from '../core/metrics/metrics.ts';
import { registerStateGauges } from '../core/metrics/state-gauges.ts';

export interface OperatorOptions {
  kubeconfig: KubeConfig;
  namespace: string;
  /** Where FfmpegCommands people make are taken in (cluster-config.ts); default: its own namespace only. */
  watchNamespaces?: 'all' | string[];
  database: Database;
  storage: Storage;
  logger: Logger;
  identity: string;
  runnerImage: string;
  reportUrl: string;
  tokenSecret: string;
  settings: EngineSettings;
  leaseSeconds?: number;
  /** Where runner pods mount their working volume (default /work). */
  runnerWorkRoot?: string;
  maxOutputFileBytes?: number;
  maxOutputFiles?: number;
  maxMemoryBytes?: number;
  podMemoryLimit?: string;
  runnerConfinement?: 'bwrap' | 'bwrap-or-pod';
  /** Runner pod placement, passed to KubernetesBackendOptions as they are. */
  runnerPlacement?: Pick<KubernetesBackendOptions, 'nodeSelector' | 'tolerations' | 'priorityClassName' | 'hostNetwork'>;
  /** Confined ffprobe for stored and uploaded files. */
  prober: FileProber;
  /** How steps wait for room (default builtin), and the disk a step asks for at least. */
  queueing?: QueueingSettings;
  runnerDiskRequest?: string;
  runnerDiskLimit?: string;
  /** Which outputs go up in parts, and their smallest part; default DEFAULT_OUTPUT_MULTIPART (tests lower it). */
  outputMultipart?: OutputMultipartSettings;
  /** Prometheus metrics: the engine's events, and the state gauges once this replica leads. */
  metrics?: Metrics;
}

export interface RunningOperator {
  /** Resolves when this replica leads and its loops run. */
  leading: Promise<void>;
  reconciler: () => Reconciler | null;
  backend: () => KubernetesBackend | null;
  /** Resolves if leadership was lost (the process should exit). */
  lost: Promise<void>;
  stop(): Promise<void>;
}

export function startOperator(o: OperatorOptions): RunningOperator {
  const logger = o.logger.child({ operator: o.identity });
  // Connections to the API server are kept and reused (keep-alive-kubeconfig.ts).
  const kubeconfig = KeepAliveKubeConfig.of(o.kubeconfig);
  const leadership = electLeader({
    kubeconfig,
    namespace: o.namespace,
    name: LEADER_LEASE,
    identity: o.identity,
    logger,
    leaseSeconds: o.leaseSeconds,
  });
  let engine: Engine | null = null;
  let backend: KubernetesBackend | null = null;
  let resources: CommandResources | null = null;
  let stopCancelWatch: () => Promise<void> = async () => {};
  let stopped = false;

  const leading = leadership.acquired.then(async () => {
    if (stopped) return;
    const commands = new CommandsRepo(o.database.db);
    const commandResources = new CommandResources({
      kubeconfig,
      namespace: o.namespace,
      watchNamespaces: o.watchNamespaces,
      logger,
      source: {
        load: (id) => commands.findById(id),
        outputs: async (id) => (await commands.outputFiles(id)).map((f) => outputOf(f, o.storage.publicUrl(f.storageKey))),
      },
    });
    resources = commandResources;
    backend = new KubernetesBackend({
      kubeconfig,
      namespace: o.namespace,
      events: new JobEventsRepo(o.database.db),
      watchEvents: (onNew) => o.database.listen(JOB_EVENT_CHANNEL, onNew, onNew),
      logger,
      health: o.database.health,
      runnerImage: o.runnerImage,
      reportUrl: o.reportUrl,
      tokenSecret: o.tokenSecret,
      ownerOf: (id) => commandResources.ownerOf(id),
      workRoot: o.runnerWorkRoot,
      maxOutputFileBytes: o.maxOutputFileBytes,
      maxOutputFiles: o.maxOutputFiles,
      maxMemoryBytes: o.maxMemoryBytes,
      podMemoryLimit: o.podMemoryLimit,
      runnerConfinement: o.runnerConfinement,
      queueing: o.queueing,
      diskRequest: o.runnerDiskRequest,
      workVolumeSize: o.runnerDiskLimit,
      ...o.runnerPlacement,
    });
    const events = new CommandEvents({
      kubeconfig,
      logger,
      component: 'ffmpeg-operator',
      // The API's resources may not be in the watch yet: their owner reference names them.
      refOf: async (id) => {
        const known = commandResources.refOf(id);
        if (known) return known;
        const owner = await commandResources.ownerOf(id);
        return owner && { namespace: o.namespace, name: owner.name, uid: owner.uid };
      },
    });
    const mirrorCommand = (id: string) => commandResources.mirror(id);
    const built = createEngine({
      // What a result may report is held to what the runners were given.
      settings: {
        ...o.settings,
        maxOutputFileBytes: o.maxOutputFileBytes ?? o.settings.maxOutputFileBytes,
        maxOutputFiles: o.maxOutputFiles ?? o.settings.maxOutputFiles,
      },
      database: o.database,
      storage: o.storage,
      backend,
      logger,
      prober: o.prober,
      maxThreads: Number.MAX_SAFE_INTEGER, // a pod gets the CPUs it requests
      stepDiskBytes: parseQuantity(o.runnerDiskLimit ?? DEFAULT_DISK_LIMIT) ?? undefined,
      // Runner pods upload large outputs in parts (core/jobs/output-parts.ts).
      outputMultipart: o.outputMultipart ?? DEFAULT_OUTPUT_MULTIPART,
      hooks: {
        onCommandChanged: mirrorCommand,
        ensureResource: (command) => commandResources.ensure(command, commands),
        onCommandEvent: (id, event) => events.record(id, event),
      },
      reconcileResyncMs: 1000,
      fileTasksResyncMs: 2000,
      metrics: o.metrics?.engine,
    });
    // Only the leader shows the database's state, so replicas do not repeat it.
    if (o.metrics) registerStateGauges(o.metrics.registry, o.database.db);
    engine = built;
    let running = false;
    const intake = new CommandIntake({
      namespaceLabels: namespaceLabelsFrom(kubeconfig),
      resources: commandResources,
      accounts: new AccountsRepo(o.database.db),
      commands,
      insert: (row, quotas) => insertSubmitted(o.database.db, row, quotas),
      quotas: new Quotas(new FilesRepo(o.database.db), () => new Date()),
      storage: o.storage,
      logger,
      event: (ref, event) => events.recordOn(ref, event),
      changed: mirrorCommand,
      stored: () => running && built.reconciler.kick(),
    });
    await commandResources.start({
      deleted: (commandId) => void built.reconciler.cancel(commandId, 'its FfmpegCommand resource was deleted; the command was stopped'),
      added: () => running && built.reconciler.kick(), // the initial list's adds come before the Job watch is ready
      takeIn: (ref) => intake.takeIn(ref),
    });
    await backend.start();
    await built.start();
    running = true;
    // A cancel asked through the API (another process) is acted on at once, not at the next resync.
    stopCancelWatch = await o.database.listen(
      COMMAND_CANCEL_CHANNEL,
      () => built.reconciler.cancelRequested(),
      () => built.reconciler.cancelRequested(), // reconnected: a notification may have been missed
    );
  });

  const stopLoops = async () => {
    await stopCancelWatch();
    await engine?.stop();
    await backend?.close();
    await resources?.stop();
  };
  // A replica that lost the lease stops acting at once (main.ts then exits).
  void leadership.lost.then(stopLoops);

  return {
    leading,
    reconciler: () => engine?.reconciler ?? null,
    backend: () => backend,
    lost: leadership.lost,
    stop: async () => {
      stopped = true;
      await stopLoops();
      await leadership.stop();
    },
  };
}
