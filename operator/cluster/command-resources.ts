// FfmpegCommand resources: created for each submitted command (by the API, or by the operator for
// rows the API stored but never turned into a resource), watched (a deleted resource cancels its
// command), and given a status that mirrors the database.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ActiveCommand, CommandRow, CommandsRepo } from '../../core/commands/commands-repo.ts';
import { CommandStatus } from '../../core/commands/command-status.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../../core/k8s/names.ts';
import { jobName } from '../../core/engine/job-backend.ts';
import type { FfmpegCommandObject, FfmpegCommandOutput, FfmpegCommandStatus } from '../../core/k8s/ffmpeg-command.ts';
import { createCommandResource } from '../../core/k8s/command-resource.ts';
import { keepIdentityOnly, keepInformer, pagedList, type KeptInformer } from './watch.ts';
import { progressView } from '../../core/commands/progress.ts';

export class CommandResources {
  private readonly kc: KubeConfig;
  private readonly namespace: string;
  private readonly logger: Logger;
  private readonly api: CustomObjectsApi;
  private watch: KeptInformer<FfmpegCommandObject> | null = null;
  private readonly pendingStatus = new Map<string, Promise<void>>();
  /**
   * Uids of resources this operator created or read while its watch had not seen them yet: a Job
   * created in that window still gets its owner (and so its garbage collection).
   */
  private readonly uidsAheadOfWatch = new Map<string, string>();

  constructor(o: { kubeconfig: KubeConfig; namespace: string; logger: Logger }) {
    this.kc = o.kubeconfig;
    this.namespace = o.namespace;
    this.logger = o.logger;
    this.api = o.kubeconfig.makeApiClient(CustomObjectsApi);
  }

  private async read(commandId: string): Promise<FfmpegCommandObject> {
    return (await this.api.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: this.namespace,
      plural: PLURAL,
      name: commandId,
    })) as FfmpegCommandObject;
  }

  /** Operator side: lists and watches the resources. */
  async start(onDeleted: (commandId: string) => void, onAdded: () => void = () => {}): Promise<void> {
    // Only names and uids are used here (ownerOf, ensure, deletions): the cache keeps no more, and the
    // list comes in pages, so thousands of finished commands cost little memory.
    this.watch = keepInformer<FfmpegCommandObject>(
      this.kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${PLURAL}`,
      pagedList(
        (cont, limit) =>
          this.api.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            namespace: this.namespace,
            plural: PLURAL,
            limit,
            _continue: cont,
          }),
        keepIdentityOnly,
      ),
      undefined,
      this.logger,
      keepIdentityOnly,
    );
    this.watch.informer.on('delete', (obj) => {
      this.uidsAheadOfWatch.delete(obj.metadata!.name!);
      onDeleted(obj.metadata!.name!);
    });
    // A new resource is a newly submitted command: reconcile now rather than at the next resync.
    this.watch.informer.on('add', (obj) => {
      this.uidsAheadOfWatch.delete(obj.metadata!.name!);
      onAdded();
    });
    await this.watch.synced;
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }

  /**
   * The owner of a command's Jobs. A command submitted during a reconcile pass can be admitted before
   * the watch has seen its resource: then (only then) the resource is read from the API server.
   */
  async ownerOf(commandId: string) {
    let uid = this.watch?.informer.get(commandId, this.namespace)?.metadata?.uid ?? this.uidsAheadOfWatch.get(commandId);
    if (!uid) {
      try {
        uid = (await this.read(commandId)).metadata?.uid;
      } catch (err) {
        if ((err as { code?: number }).code !== 404) throw err;
      }
      if (uid) this.uidsAheadOfWatch.set(commandId, uid);
    }
    return uid ? { apiVersion: API_VERSION, kind: KIND, name: commandId, uid } : null;
  }

  /** Level-triggered: creates a missing resource, or reports that the user deleted it. */
  async ensure(
    command: Pick<ActiveCommand, 'id' | 'resourceCreatedAt'>,
    commands: CommandsRepo,
  ): Promise<'present' | 'created' | 'deleted'> {
    if (this.watch?.informer.get(command.id, this.namespace)) return 'present';
    if (command.resourceCreatedAt) {
      // The watch may lag behind the API that just created it: only the API server's 404 means deleted.
      try {
        const obj = await this.read(command.id);
        if (obj.metadata?.uid) this.uidsAheadOfWatch.set(command.id, obj.metadata.uid);
        return 'present';
      } catch (err) {
        if ((err as { code?: number }).code === 404) return 'deleted';
        throw err;
      }
    }
    // The uid is noted before the row's stamp, so a watch event that comes first finds it to clear.
    const created = await createCommandResource(this.api, this.namespace, commands, command.id, (uid) =>
      this.uidsAheadOfWatch.set(command.id, uid),
    );
    if (!created) return 'present'; // gone meanwhile: nothing to create
    this.logger.info({ command_id: command.id }, 'created the missing FfmpegCommand');
    return 'created';
  }

  /** Mirrors a command's row into its resource's status; calls for one command are coalesced. */
  mirror(
    commandId: string,
    load: () => Promise<CommandRow | null>,
    outputs: () => Promise<(Omit<FfmpegCommandOutput, 'sizeBytes'> & { sizeBytes: number | null })[]>,
  ): void {
    if (this.pendingStatus.has(commandId)) return;
    const work = (async () => {
      await new Promise((r) => setTimeout(r, 20));
      this.pendingStatus.delete(commandId);
      const command = await load();
      if (!command) return;
      const end = command.finishedAt ?? new Date();
      const status: FfmpegCommandStatus = {
        phase: command.status === CommandStatus.PREPARED_FFMPEG_COMMAND ? CommandStatus.PROCESSING : command.status,
        stage: command.processingStage ?? '',
        currentStep: command.currentStep,
        jobNames: command.status === CommandStatus.QUEUED ? [] : [jobName(command.id, command.currentStep, command.attempt)],
        queuedAt: command.createdAt.toISOString(),
        startedAt: command.startedAt?.toISOString() ?? null,
        finishedAt: command.finishedAt?.toISOString() ?? null,
        durationSeconds: Math.round((end.getTime() - command.createdAt.getTime()) / 100) / 10,
        errorStatus: command.errorStatus ?? '',
        errorMessage: command.errorMessage ?? '',
        // As in a poll; null (and a null percent) removes it from the status, as a merge patch does.
        progress: progressView(command),
        outputs: (await outputs()).map((o) => ({ ...o, sizeBytes: o.sizeBytes ?? 0 })),
      };
      await this.api.patchNamespacedCustomObjectStatus(
        { group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL, name: command.id, body: { status } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    })().catch((err) => {
      this.pendingStatus.delete(commandId);
      if ((err as { code?: number }).code !== 404)
        this.logger.warn({ command_id: commandId, err: (err as Error).message }, 'status mirror failed');
    });
    this.pendingStatus.set(commandId, work);
  }
}
