// Takes in an FfmpegCommand that someone made (kubectl apply, Argo CD, a pipeline step): its namespace's
// binding says which account and environment it runs for; its spec is checked as the HTTP API checks a
// request (the same 422 and 403 texts) and stored as a command whose id is the resource's uid. From
// there it is a command like any other: the API polls and lists it, the reconciler runs it, its status
// is mirrored. A resource that cannot be taken in is refused for good: a FAILED status that names the
// cause, a Warning Event, no command, nothing run.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ENVIRONMENT_NAME, type AccountsRepo, type Caller } from '../../core/accounts/accounts-repo.ts';
import { PlanRefusal } from '../../core/accounts/plan-refusal.ts';
import type { Quotas } from '../../core/accounts/quotas.ts';
import type { CommandRow, CommandsRepo, NewCommandQuotas, NewCommandRow } from '../../core/commands/commands-repo.ts';
import { endsAtSubmit } from '../../core/commands/ended-at-submit.ts';
import { isUniqueViolation } from '../../core/db/unique-violation.ts';
import { requestBodyOf, RefusalStatus } from '../../core/k8s/ffmpeg-command.ts';
import { DEFAULT_BOUND_ENVIRONMENT, NAMESPACE_BINDING } from '../../core/k8s/names.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { commandRowOfBody } from '../../api/commands/submission.ts';
import { RequestInvalid } from '../../api/schemas/validation.ts';
import type { CommandEvent } from './command-events.ts';
import type { CommandResources, ResourceRef } from './command-resources.ts';
import { refusedStatus, statusOf } from './command-status.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The HTTP API's field names in a 422's loc, as the spec names them. */
const SPEC_FIELD: Record<string, string> = {
  ffmpeg_command: 'command',
  ffmpeg_commands: 'commands',
  input_files: 'inputFiles',
  input_compressed_folder: 'inputCompressedFolder',
  output_files: 'outputFiles',
  vcpu_count: 'vcpuCount',
  max_command_run_seconds: 'maxCommandRunSeconds',
  metadata: 'metadata',
  is_private: 'isPrivate',
};

/** A 422's items as one message: each with where it is in the spec, then the HTTP API's text. */
export function invalidMessage(err: RequestInvalid): string {
  return err.detail
    .map((d) => {
      const [, field, ...rest] = d.loc;
      const path = ['spec', field === undefined ? undefined : (SPEC_FIELD[String(field)] ?? String(field)), ...rest]
        .filter((p) => p !== undefined)
        .join('.');
      return `${path}: ${d.msg}`;
    })
    .join('; ');
}

/** Why a resource is refused: thrown inside an intake, turned into its status and Event. */
class Refusal extends Error {
  readonly why: RefusalStatus;
  constructor(why: RefusalStatus, message: string) {
    super(message);
    this.why = why;
  }
}

export interface CommandIntakeOptions {
  /** A namespace's labels (the binding), or null when there is no such namespace. */
  namespaceLabels: (namespace: string) => Promise<Record<string, string> | null>;
  resources: Pick<CommandResources, 'read' | 'patchStatus'>;
  accounts: AccountsRepo;
  commands: CommandsRepo;
  /** Stores a new command (ended-at-submit.ts insertSubmitted). */
  insert: (row: NewCommandRow, quotas: NewCommandQuotas) => Promise<CommandRow>;
  quotas: Quotas;
  storage: Storage;
  logger: Logger;
  /** An Event on the resource (command-events.ts). */
  event: (ref: ResourceRef, event: CommandEvent) => void;
  /** The stored command's status should be written (the engine's onCommandChanged). */
  changed: (commandId: string) => void;
  /** A command was stored: the reconciler may start it. */
  stored: () => void;
  clock?: () => Date;
}

/** Namespace labels read from the API server (the operator may get namespaces cluster-wide). */
export function namespaceLabelsFrom(kubeconfig: KubeConfig): CommandIntakeOptions['namespaceLabels'] {
  const core = kubeconfig.makeApiClient(CoreV1Api);
  return async (name) => {
    try {
      return (await core.readNamespace({ name })).metadata?.labels ?? {};
    } catch (err) {
      if ((err as { code?: number }).code === 404) return null;
      throw err;
    }
  };
}

export class CommandIntake {
  private readonly o: CommandIntakeOptions;
  /** Uids being taken in now: a resync does not start a second intake of the same resource. */
  private readonly busy = new Set<string>();
  /** Resources waiting for one of the MAX_RUNNING intakes: thousands applied at once do not become thousands of transactions. */
  private readonly waiting = new Map<string, ResourceRef>();
  private static readonly MAX_RUNNING = 8;

  constructor(o: CommandIntakeOptions) {
    this.o = o;
  }

  /**
   * Takes the resource in, once, at most MAX_RUNNING at a time; a failure that is not the resource's own
   * is logged and tried again at the next resync.
   */
  takeIn(ref: ResourceRef): void {
    if (this.busy.has(ref.uid)) return;
    this.waiting.set(ref.uid, ref);
    this.next();
  }

  private next(): void {
    for (const [uid, ref] of this.waiting) {
      if (this.busy.size >= CommandIntake.MAX_RUNNING) return;
      this.waiting.delete(uid);
      void this.takeInNow(ref).finally(() => this.next());
    }
  }

  /** takeIn, resolving when done (tests). */
  async takeInNow(ref: ResourceRef): Promise<void> {
    if (this.busy.has(ref.uid)) return;
    this.busy.add(ref.uid);
    await this.run(ref)
      .catch((err: unknown) =>
        this.o.logger.warn(
          { namespace: ref.namespace, name: ref.name, err: (err as Error).message },
          'could not take in an FfmpegCommand; trying again',
        ),
      )
      .finally(() => this.busy.delete(ref.uid));
  }

  private async run(ref: ResourceRef): Promise<void> {
    const clock = this.o.clock ?? (() => new Date());
    // Stored already (a status write that did not happen, or a second look): only its status is due.
    if (await this.o.commands.findById(ref.uid)) {
      this.o.changed(ref.uid);
      return;
    }
    const obj = await this.o.resources.read(ref);
    // Gone, or another object of the same name now, or decided already.
    if (!obj || obj.metadata?.uid !== ref.uid || obj.status?.commandId || obj.status?.phase) return;
    const createdAt = obj.metadata?.creationTimestamp ? new Date(obj.metadata.creationTimestamp) : clock();
    const generation = obj.metadata?.generation;
    try {
      const caller = await this.callerOf(ref.namespace);
      const row = await commandRowOfBody(caller, requestBodyOf(obj.spec ?? {}), this.o.storage).catch((err: unknown) => {
        if (err instanceof RequestInvalid) throw new Refusal(RefusalStatus.INVALID_COMMAND, invalidMessage(err));
        throw err;
      });
      const taken = { ...row, id: ref.uid, resourceNamespace: ref.namespace, resourceName: ref.name, resourceCreatedAt: clock() };
      let stored: CommandRow | null = null;
      try {
        await this.o.quotas.storeNewCommand(caller.account, async (quotas) => void (stored = await this.o.insert(taken, quotas)));
      } catch (err) {
        if (!isUniqueViolation(err)) throw err; // else: taken in by another intake meanwhile
      }
      if (!stored) return;
      // Written before this intake kicks the reconciler, so `kubectl get` shows it QUEUED (or ended at
      // submit) first and a resync sees it taken in; read again, as a pass for another command may have
      // started it already. Only to this very object (its uid).
      const now = (await this.o.commands.findById(ref.uid)) ?? stored;
      await this.o.resources.patchStatus(ref, statusOf(now, [], clock(), generation));
      this.o.logger.info(
        { command_id: ref.uid, namespace: ref.namespace, name: ref.name, account_id: caller.account.id },
        'took in an FfmpegCommand',
      );
      this.o.event(ref, {
        reason: 'Queued',
        message: `accepted as command ${ref.uid} for account ${caller.account.name} (environment ${caller.environment})`,
        warning: false,
      });
      // One that ffmpeg would stop on has ended already (FAILED): there is nothing to run.
      if (endsAtSubmit(taken))
        this.o.event(ref, { reason: 'Failed', message: `${taken.errorStatus}: ${taken.errorMessage}`, warning: true });
      else this.o.stored();
    } catch (err) {
      const refusal =
        err instanceof Refusal ? err : err instanceof PlanRefusal ? new Refusal(RefusalStatus.NOT_ALLOWED, err.message) : null;
      if (!refusal) throw err;
      await this.o.resources.patchStatus(ref, refusedStatus(refusal.why, refusal.message, createdAt, clock(), generation));
      this.o.logger.warn(
        { namespace: ref.namespace, name: ref.name, refusal: refusal.why, message: refusal.message },
        'refused an FfmpegCommand',
      );
      this.o.event(ref, { reason: 'Refused', message: `${refusal.why}: ${refusal.message}`, warning: true });
    }
  }

  /** The account and environment a namespace is bound to (its labels); a Refusal when it is not bound. */
  private async callerOf(namespace: string): Promise<Caller> {
    const labels = (await this.o.namespaceLabels(namespace)) ?? {};
    const accountId = labels[NAMESPACE_BINDING.account];
    const howToBind = `a cluster admin binds it with: kubectl label namespace ${namespace} ${NAMESPACE_BINDING.account}=<account id>`;
    if (!accountId) throw new Refusal(RefusalStatus.NAMESPACE_NOT_BOUND, `namespace ${namespace} is not bound to an account; ${howToBind}`);
    const account = UUID.test(accountId) ? await this.o.accounts.getAccount(accountId) : null;
    if (!account) {
      throw new Refusal(
        RefusalStatus.NAMESPACE_NOT_BOUND,
        `namespace ${namespace} is bound to account ${accountId}, which does not exist; ${howToBind}`,
      );
    }
    const environment = labels[NAMESPACE_BINDING.environment] ?? DEFAULT_BOUND_ENVIRONMENT;
    if (!ENVIRONMENT_NAME.test(environment)) {
      throw new Refusal(
        RefusalStatus.NAMESPACE_NOT_BOUND,
        `namespace ${namespace} names the environment ${JSON.stringify(environment)}, which is not an environment name (${ENVIRONMENT_NAME.source})`,
      );
    }
    return { account, environment, keyId: `namespace/${namespace}` };
  }
}
