// FfmpegCommand resources, in the operator's namespace and in the namespaces it watches for people's own
// (kubectl, GitOps): created for each command the HTTP API stored (by the API, or here for rows it never
// turned into a resource), taken in when someone else made them (command-intake.ts), watched (a deleted
// resource cancels its command), and given a status that mirrors the database (command-status.ts).
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ActiveCommand, CommandRow, CommandsRepo } from '../../core/commands/commands-repo.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../../core/k8s/names.ts';
import {
  commandIdOf,
  madeByTheApi,
  type FfmpegCommandObject,
  type FfmpegCommandOutput,
  type FfmpegCommandStatus,
} from '../../core/k8s/ffmpeg-command.ts';
import { createCommandResource } from '../../core/k8s/command-resource.ts';
import { keepIdentityOnly, keepInformer, pagedList, type KeptInformer } from './watch.ts';
import { statusOf } from './command-status.ts';

/** Where a command's resource is. */
export interface ResourceRef {
  namespace: string;
  name: string;
  uid: string;
  /** metadata.generation, when known: 1 unless the spec changed, which the CRD refuses. */
  generation?: number;
}

export interface ResourceHandlers {
  /** A resource was deleted: its command (if it has one) is cancelled. */
  deleted: (commandId: string) => void;
  /** A new resource: the reconciler may have a new command to start. */
  added: () => void;
  /** A resource someone made, not taken in yet (called again at each resync until it is). */
  takeIn: (ref: ResourceRef) => void;
}

/** Identity, plus what tells whether a resource was taken in (its status' commandId and phase). */
function keepIdentityAndIntake(obj: FfmpegCommandObject): void {
  const status = obj.status;
  const generation = obj.metadata?.generation;
  keepIdentityOnly(obj);
  if (obj.metadata && generation !== undefined) obj.metadata.generation = generation;
  if (status && (status.commandId || status.phase)) obj.status = { commandId: status.commandId, phase: status.phase };
}

export class CommandResources {
  private readonly kc: KubeConfig;
  private readonly namespace: string;
  private readonly watchNamespaces: 'all' | string[];
  private readonly logger: Logger;
  private readonly api: CustomObjectsApi;
  private watches: KeptInformer<FfmpegCommandObject>[] = [];
  private readonly pendingStatus = new Map<string, Promise<void>>();
  /** The resource of each command, by command id, as the watches see them. */
  private readonly refs = new Map<string, ResourceRef>();
  /**
   * Uids of resources this operator created or read while its watch had not seen them yet: a Job
   * created in that window still gets its owner (and so its garbage collection).
   */
  private readonly uidsAheadOfWatch = new Map<string, string>();
  private resync: NodeJS.Timeout | null = null;

  constructor(o: { kubeconfig: KubeConfig; namespace: string; watchNamespaces?: 'all' | string[]; logger: Logger }) {
    this.kc = o.kubeconfig;
    this.namespace = o.namespace;
    this.watchNamespaces = o.watchNamespaces ?? [o.namespace];
    this.logger = o.logger;
    this.api = o.kubeconfig.makeApiClient(CustomObjectsApi);
  }

  /** A resource whole (spec and status), or null when it is gone. */
  async read(ref: Pick<ResourceRef, 'namespace' | 'name'>): Promise<FfmpegCommandObject | null> {
    try {
      return (await this.api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: ref.namespace,
        plural: PLURAL,
        name: ref.name,
      })) as FfmpegCommandObject;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return null;
      throw err;
    }
  }

  private informerFor(namespace: string | null): KeptInformer<FfmpegCommandObject> {
    const path = namespace === null ? `/apis/${GROUP}/${VERSION}/${PLURAL}` : `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`;
    const page = (cont: string | undefined, limit: number) =>
      namespace === null
        ? this.api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, limit, _continue: cont })
        : this.api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, limit, _continue: cont });
    // Only identities (and whether each was taken in) are kept, and the list comes in pages, so
    // thousands of finished commands cost little memory.
    return keepInformer<FfmpegCommandObject>(
      this.kc,
      path,
      pagedList(page as never, keepIdentityAndIntake),
      undefined,
      this.logger,
      keepIdentityAndIntake,
    );
  }

  /** Whether a cached resource still waits to be taken in. */
  private awaitsIntake(obj: FfmpegCommandObject): boolean {
    return !madeByTheApi(obj, this.namespace) && !obj.status?.commandId && !obj.status?.phase && !obj.metadata?.deletionTimestamp;
  }

  private refOfObject(obj: KubernetesObject): ResourceRef {
    const m = obj.metadata!;
    return { namespace: m.namespace!, name: m.name!, uid: m.uid!, generation: m.generation };
  }

  /** Operator side: lists and watches the resources. */
  async start(handlers: ResourceHandlers, intakeResyncMs = 10_000): Promise<void> {
    const namespaces = this.watchNamespaces === 'all' ? [null] : this.watchNamespaces;
    this.watches = namespaces.map((ns) => this.informerFor(ns));
    for (const watch of this.watches) {
      watch.informer.on('delete', (obj) => {
        const id = commandIdOf(obj, this.namespace);
        if (!id) return;
        this.refs.delete(id);
        this.uidsAheadOfWatch.delete(id);
        handlers.deleted(id);
      });
      // A new resource is a newly submitted command: reconcile now rather than at the next resync.
      watch.informer.on('add', (obj) => {
        const id = commandIdOf(obj, this.namespace);
        if (id) {
          this.refs.set(id, this.refOfObject(obj));
          this.uidsAheadOfWatch.delete(id);
        }
        if (this.awaitsIntake(obj)) handlers.takeIn(this.refOfObject(obj));
        handlers.added();
      });
    }
    await Promise.all(this.watches.map((w) => w.synced));
    // An intake that failed (the database or the API server away for a moment) is tried again.
    this.resync = setInterval(() => {
      for (const watch of this.watches)
        for (const obj of watch.informer.list()) if (this.awaitsIntake(obj)) handlers.takeIn(this.refOfObject(obj));
    }, intakeResyncMs);
    this.resync.unref();
  }

  async stop(): Promise<void> {
    if (this.resync) clearInterval(this.resync);
    await Promise.all(this.watches.map((w) => w.stop()));
  }

  /** Where the command's resource is, as far as the watches know. */
  refOf(commandId: string): ResourceRef | null {
    return this.refs.get(commandId) ?? null;
  }

  /**
   * The owner of a command's Jobs, which run in the operator's namespace: the resource, when it is there
   * too (an owner cannot be in another namespace; a resource elsewhere cancels its command when deleted).
   * A command submitted during a reconcile pass can be admitted before the watch has seen its resource:
   * then (only then) the resource is read from the API server.
   */
  async ownerOf(commandId: string) {
    const owner = (name: string, uid: string) => ({ apiVersion: API_VERSION, kind: KIND, name, uid });
    const ref = this.refs.get(commandId);
    if (ref) return ref.namespace === this.namespace ? owner(ref.name, ref.uid) : null;
    let uid = this.uidsAheadOfWatch.get(commandId);
    if (!uid) {
      uid = (await this.read({ namespace: this.namespace, name: commandId }))?.metadata?.uid;
      if (uid) this.uidsAheadOfWatch.set(commandId, uid);
    }
    return uid ? owner(commandId, uid) : null;
  }

  /** Level-triggered: creates a missing resource, or reports that the user deleted it. */
  async ensure(
    command: Pick<ActiveCommand, 'id' | 'resourceCreatedAt'>,
    commands: CommandsRepo,
  ): Promise<'present' | 'created' | 'deleted'> {
    if (this.refs.has(command.id)) return 'present';
    if (command.resourceCreatedAt) {
      // The watch may lag behind the API that just created it: only the API server's 404 means deleted.
      const row = await commands.findById(command.id);
      const obj = await this.read(resourceOfRow(row ?? { id: command.id, resourceNamespace: null, resourceName: null }, this.namespace));
      if (!obj) return 'deleted';
      if (obj.metadata?.uid && !row?.resourceNamespace) this.uidsAheadOfWatch.set(command.id, obj.metadata.uid);
      return 'present';
    }
    // The uid is noted before the row's stamp, so a watch event that comes first finds it to clear.
    const created = await createCommandResource(this.api, this.namespace, commands, command.id, (uid) =>
      this.uidsAheadOfWatch.set(command.id, uid),
    );
    if (!created) return 'present'; // gone meanwhile: nothing to create
    this.logger.info({ command_id: command.id }, 'created the missing FfmpegCommand');
    return 'created';
  }

  /** Writes a resource's status (a merge patch through /status). */
  async patchStatus(ref: Pick<ResourceRef, 'namespace' | 'name'>, status: FfmpegCommandStatus): Promise<void> {
    await this.api.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace: ref.namespace, plural: PLURAL, name: ref.name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /** Mirrors a command's row into its resource's status; calls for one command are coalesced. */
  mirror(commandId: string, load: () => Promise<CommandRow | null>, outputs: () => Promise<FfmpegCommandOutput[]>): void {
    if (this.pendingStatus.has(commandId)) return;
    const work = (async () => {
      await new Promise((r) => setTimeout(r, 20));
      this.pendingStatus.delete(commandId);
      const command = await load();
      if (!command) return;
      const generation = this.refs.get(commandId)?.generation;
      await this.patchStatus(resourceOfRow(command, this.namespace), statusOf(command, await outputs(), new Date(), generation));
    })().catch((err) => {
      this.pendingStatus.delete(commandId);
      if ((err as { code?: number }).code !== 404)
        this.logger.warn({ command_id: commandId, err: (err as Error).message }, 'status mirror failed');
    });
    this.pendingStatus.set(commandId, work);
  }
}

/** A command's resource: the one it was taken in from, or the API's (named after it in the operator's namespace). */
export function resourceOfRow(
  command: Pick<CommandRow, 'id' | 'resourceNamespace' | 'resourceName'>,
  operatorNamespace: string,
): { namespace: string; name: string } {
  return command.resourceNamespace && command.resourceName
    ? { namespace: command.resourceNamespace, name: command.resourceName }
    : { namespace: operatorNamespace, name: command.id };
}
