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
  specOf,
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
  /** Made by the previous release: its spec shows nothing until the operator writes it (once) from the stored command. */
  legacySpec?: boolean;
}

export interface StatusSource {
  load: (commandId: string) => Promise<CommandRow | null>;
  outputs: (commandId: string) => Promise<FfmpegCommandOutput[]>;
}

export interface ResourceHandlers {
  /** A resource was deleted: its command (if it has one) is cancelled. */
  deleted: (commandId: string) => void;
  /** A new resource: the reconciler may have a new command to start. */
  added: () => void;
  /** A resource someone made, not taken in yet (called again at each resync until it is). */
  takeIn: (ref: ResourceRef) => void;
}

/**
 * Identity, plus what tells whether a resource was taken in (its status' commandId and phase), and an
 * empty spec for one whose spec has neither command nor commands: made by the previous release (v1alpha1),
 * whose internal spec v1beta1 does not show.
 */
function keepIdentityAndIntake(obj: FfmpegCommandObject): void {
  const { status, spec } = obj;
  const generation = obj.metadata?.generation;
  keepIdentityOnly(obj);
  if (obj.metadata && generation !== undefined) obj.metadata.generation = generation;
  if (status && (status.commandId || status.phase)) obj.status = { commandId: status.commandId, phase: status.phase };
  if (spec && spec.command === undefined && spec.commands === undefined) obj.spec = {};
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
  private stopped = false;
  private readonly source: StatusSource;

  constructor(o: {
    kubeconfig: KubeConfig;
    namespace: string;
    watchNamespaces?: 'all' | string[];
    logger: Logger;
    /** What a status is made of: the command's row and its outputs (command-status.ts). */
    source: StatusSource;
  }) {
    this.source = o.source;
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
      pagedList(page, keepIdentityAndIntake),
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
    const legacySpec = (obj as FfmpegCommandObject).spec !== undefined;
    return { namespace: m.namespace!, name: m.name!, uid: m.uid!, generation: m.generation, legacySpec };
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
    void this.migrateLegacy();
  }

  async stop(): Promise<void> {
    this.stopped = true;
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
      // Taken in from a resource that was deleted, and another made under its name since.
      if (row?.resourceNamespace && obj.metadata?.uid !== command.id) return 'deleted';
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

  /**
   * Writes a resource's status (a merge patch through /status). With the resource's uid, only to that
   * very object: one deleted and made again under the same name (a new uid) answers 409 and is not written.
   */
  async patchStatus(ref: Pick<ResourceRef, 'namespace' | 'name'> & { uid?: string }, status: FfmpegCommandStatus): Promise<void> {
    const body = ref.uid ? { metadata: { uid: ref.uid }, status } : { status };
    await this.api.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace: ref.namespace, plural: PLURAL, name: ref.name, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /**
   * The user-facing spec of a resource the previous release made, from its stored command: written once
   * (the CRD lets an empty spec be filled in, then holds it immutable), so `kubectl get -o yaml` shows
   * what runs. A failure is logged; the status is written all the same.
   */
  private async writeLegacySpec(ref: ResourceRef, command: CommandRow): Promise<void> {
    try {
      await this.api.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace: ref.namespace, plural: PLURAL, name: ref.name, body: { spec: specOf(command) } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      ref.legacySpec = false;
      this.logger.info({ command_id: command.id }, "wrote the user-facing spec of the previous release's FfmpegCommand");
    } catch (err) {
      if ((err as { code?: number }).code === 422)
        ref.legacySpec = false; // written meanwhile: immutable now
      else
        this.logger.warn({ command_id: command.id, err: (err as Error).message }, 'could not write the spec of an earlier FfmpegCommand');
    }
  }

  /** Mirrors a command's row into its resource's status; calls for one command are coalesced. */
  mirror(commandId: string): void {
    if (this.pendingStatus.has(commandId)) return;
    const work = (async () => {
      await new Promise((r) => setTimeout(r, 20));
      this.pendingStatus.delete(commandId);
      await this.mirrorNow(commandId);
    })().catch((err) => {
      this.pendingStatus.delete(commandId);
      // 404: the resource is gone; 409: another object has its name now. Neither is this command's.
      const code = (err as { code?: number }).code;
      if (code !== 404 && code !== 409) this.logger.warn({ command_id: commandId, err: (err as Error).message }, 'status mirror failed');
    });
    this.pendingStatus.set(commandId, work);
  }

  private async mirrorNow(commandId: string): Promise<void> {
    const command = await this.source.load(commandId);
    if (!command) return;
    const ref = this.refs.get(commandId);
    if (ref?.legacySpec) await this.writeLegacySpec(ref, command);
    const status = statusOf(command, await this.source.outputs(commandId), new Date(), ref?.generation);
    // A command taken in from a resource is that resource's uid: a new object of the same name is not its.
    const uid = command.resourceNamespace ? command.id : undefined;
    await this.patchStatus({ ...resourceOfRow(command, this.namespace), uid }, status);
  }

  /**
   * After the upgrade from v1alpha1: the resources the previous release made get their spec and a status
   * with conditions, one at a time in the background (their commands may have ended long ago, so no
   * change of theirs would bring the mirror).
   */
  private async migrateLegacy(): Promise<void> {
    const legacy = [...this.refs.entries()].filter(([, ref]) => ref.legacySpec);
    if (legacy.length > 0) this.logger.info({ resources: legacy.length }, "writing the spec of the previous release's FfmpegCommands");
    for (const [commandId, ref] of legacy) {
      if (this.stopped) return;
      if (!ref.legacySpec) continue;
      await this.mirrorNow(commandId).catch((err: unknown) => {
        if ((err as { code?: number }).code !== 404)
          this.logger.warn({ command_id: commandId, err: (err as Error).message }, 'could not write an earlier FfmpegCommand');
      });
    }
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
