// The one reconcile logic of both modes. Level-triggered: every pass compares what the database says
// (QUEUED/PROCESSING commands) with the jobs that exist and closes the gap, so a restart at any moment
// changes no outcome. Runner events are applied through the same serialised section.
import type { Logger } from 'pino';
import type { ActiveCommand, CommandRow, CommandsRepo, NewFileRow } from '../commands/commands-repo.ts';
import { CommandStatus } from '../commands/command-status.ts';
import { FileStatus, StoreType } from '../files/file-status.ts';
import { ErrorStatus } from '../commands/error-status.ts';
import type { RunnerEvent } from '../jobs/step-spec.ts';
import { ProcessingStage } from '../jobs/step-spec.ts';
import type { Storage } from '../storage/storage.ts';
import { objectKey } from '../storage/object-keys.ts';
import { admitToCapacity, sharedVcpus } from './admission.ts';
import { jobName, type JobBackend, type JobRef } from './job-backend.ts';
import { buildStepSpec, playlistStagingKey, stepDeadlineSeconds, type RunLimits } from './step-spec-builder.ts';
import { unpackPlaylist } from './playlist-unpack.ts';

/** Commands started per pass when the backend has no shared capacity (a cluster's scheduler queues). */
const UNLIMITED_PASS_SIZE = 200;

export interface ReconcilerOptions {
  commands: CommandsRepo;
  backend: JobBackend;
  storage: Storage;
  logger: Logger;
  limits: RunLimits;
  clock?: () => Date;
  /** Times a step is started before an interrupted command is given up (FAILED, INTERRUPTED). */
  maxAttempts?: number;
  /** Scratch space (unpacking playlists). */
  workDir: string;
  /** Called after every change of a command's state (cluster mode mirrors it into the resource). */
  onCommandChanged?: (commandId: string) => void;
  /** Cluster mode: make sure every active command has its FfmpegCommand (called on every pass). */
  ensureResource?: (command: ActiveCommand) => Promise<'present' | 'created' | 'deleted'>;
  /** Safety-net pass interval; passes also run whenever something changes. */
  resyncMs?: number;
}

export class Reconciler {
  private readonly options: ReconcilerOptions;
  private readonly clock: () => Date;
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private passPending = false;
  private stopped = false;
  /** The last pass found the shared capacity taken, and nothing has ended since. */
  private capacityFull = false;

  constructor(o: ReconcilerOptions) {
    this.options = o;
    this.clock = o.clock ?? (() => new Date());
    // Slow preparation (copying a playlist's files into storage) happens before the serialised
    // section, so it does not hold up other commands' transitions. Events of one Job stay in order:
    // only its last one, the result, can take long.
    o.backend.subscribe((ref, event) => {
      const prepared = this.prepare(ref, event);
      void prepared.then((problem) => {
        if (!this.stopped) void this.serial(() => this.apply(ref, event, problem));
      });
    });
  }

  start(): void {
    this.kick();
    this.timer = setInterval(() => this.kick(), this.options.resyncMs ?? 2000);
    this.timer.unref();
  }

  /** Asks for a pass soon; many kicks before it runs make one pass. */
  kick(): void {
    this.capacityFull = false;
    if (this.passPending || this.stopped) return;
    this.passPending = true;
    void this.serial(async () => {
      this.passPending = false;
      await this.reconcileOnce();
    });
  }

  /**
   * A new command was stored. While the capacity is taken it could not start anyway: it waits for the
   * pass that the end of a running command asks for (or the resync), and a burst of submits costs no
   * pass each.
   */
  submitted(): void {
    if (!this.capacityFull) this.kick();
  }

  /** Waits for queued work to finish, then stops taking more. Jobs keep their state in the backend. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.queue;
  }

  private serial(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work).catch((err: unknown) => {
      this.options.logger.error({ err }, 'reconcile step failed; the next pass retries');
    });
    this.queue = next;
    return next;
  }

  /** Stops a command's Job and fails it (cluster mode: its FfmpegCommand was deleted). */
  cancel(commandId: string, message: string): Promise<void> {
    return this.serial(async () => {
      const command = await this.options.commands.findById(commandId);
      if (!command || (command.status !== CommandStatus.QUEUED && command.status !== CommandStatus.PROCESSING)) return;
      if (command.status === CommandStatus.PROCESSING)
        await this.options.backend.deleteJob(jobName(command.id, command.currentStep, command.attempt));
      await this.fail(command, ErrorStatus.CANCELLED, message);
    });
  }

  async reconcileOnce(): Promise<void> {
    if (this.options.ensureResource) {
      for (const command of await this.options.commands.active()) {
        const state = await this.options.ensureResource(command);
        if (state === 'deleted') {
          if (command.status === CommandStatus.PROCESSING)
            await this.options.backend.deleteJob(jobName(command.id, command.currentStep, command.attempt));
          await this.fail(command, ErrorStatus.CANCELLED, 'its FfmpegCommand resource was deleted; the command was stopped');
        }
      }
    }
    const jobs = await this.options.backend.listJobNames();
    let running = await this.options.commands.processing();
    const lost = running.filter((command) => !jobs.has(jobName(command.id, command.currentStep, command.attempt)));
    for (const command of lost) await this.recoverLostJob(command);
    if (lost.length > 0) running = await this.options.commands.processing();
    const capacity = this.options.backend.capacityVcpus;
    // While the shared capacity is taken nothing can start: a pass then costs one small read, however
    // long the queue.
    this.capacityFull = capacity !== null && sharedVcpus(running, capacity) >= capacity;
    if (this.capacityFull) return;
    // A plan lowered after submission: a command that can never fit would block its account forever.
    for (const command of await this.options.commands.overPlan()) {
      await this.fail(
        { id: command.id, ffmpegSeconds: 0, processedBytes: 0 },
        ErrorStatus.PLAN_LIMIT_EXCEEDED,
        `vcpu_count ${command.vcpuCount} is more than the ${command.planMaxVcpus} vCPUs the account's plan allows now`,
      );
    }
    // The database prefilters the queue by each account's plan; every candidate uses at least one
    // vCPU of the shared capacity, so capacity + 1 rows are all a pass can start or stop at.
    const limit = capacity === null ? UNLIMITED_PASS_SIZE : capacity + 1;
    const candidates = await this.options.commands.admissible(limit);
    if (candidates.length === 0) return;
    const admitted = admitToCapacity(running, candidates, capacity);
    // Without a shared capacity every candidate starts; more may wait behind this pass's batch.
    if (capacity === null && candidates.length === limit) this.kick();
    for (const id of admitted) {
      // The pass reads light rows; a command about to start needs its steps and outputs.
      const command = await this.options.commands.findById(id);
      if (command?.status !== CommandStatus.QUEUED) continue;
      const patch = { status: CommandStatus.PROCESSING, startedAt: this.clock(), currentStep: 0, attempt: 1 };
      await this.options.commands.update(command.id, { ...patch, processingStage: ProcessingStage.DOWNLOADING });
      this.options.onCommandChanged?.(command.id);
      this.log(command).info({ vcpu_count: command.vcpuCount }, 'command admitted');
      await this.startStep({ ...command, ...patch });
    }
  }

  /** The job of a PROCESSING command is gone (the process restarted): run the step again, or give up. */
  private async recoverLostJob(command: ActiveCommand): Promise<void> {
    const maxAttempts = this.options.maxAttempts ?? 3;
    if (command.attempt >= maxAttempts) {
      await this.fail(
        command,
        ErrorStatus.INTERRUPTED,
        `the service stopped while this command ran, ${command.attempt} times; it was not tried again`,
      );
      return;
    }
    const attempt = command.attempt + 1;
    this.log(command).warn({ step: command.currentStep, attempt }, 'job lost (service restarted?), running the step again');
    await this.options.commands.update(command.id, { attempt, processingStage: ProcessingStage.DOWNLOADING });
    const row = await this.options.commands.findById(command.id);
    if (row) await this.startStep(row);
  }

  private async startStep(command: CommandRow): Promise<void> {
    const ref: JobRef = {
      name: jobName(command.id, command.currentStep, command.attempt),
      commandId: command.id,
      step: command.currentStep,
      attempt: command.attempt,
    };
    try {
      const spec = await buildStepSpec(command, command.currentStep, this.options.storage, this.options.limits);
      await this.options.backend.ensureJob({
        ref,
        spec,
        vcpus: command.vcpuCount,
        deadlineSeconds: stepDeadlineSeconds(command, this.options.limits),
        accountId: command.accountId,
      });
    } catch (err) {
      await this.fail(command, ErrorStatus.INTERNAL_ERROR, `could not start step ${command.currentStep + 1}: ${(err as Error).message}`);
    }
  }

  /** Unpacks the playlist outputs of a successful result; returns what went wrong, if anything. */
  private async prepare(ref: JobRef, event: RunnerEvent): Promise<string | null> {
    if (event.type !== 'result' || !event.ok) return null;
    try {
      const command = await this.options.commands.findById(ref.commandId);
      if (!command || jobName(command.id, command.currentStep, command.attempt) !== ref.name) return null;
      for (const o of event.outputs) {
        const declared = command.outputs.find((d) => d.alias === o.alias);
        if (declared?.kind !== 'playlist') continue;
        const key = objectKey({
          isPrivate: command.isPrivate,
          accountId: command.accountId,
          fileId: declared.fileId,
          fileName: declared.fileName,
        });
        try {
          await unpackPlaylist(
            this.options.storage,
            playlistStagingKey(command.accountId, declared.fileId),
            key.slice(0, key.lastIndexOf('/') + 1),
            this.options.workDir,
          );
        } catch (err) {
          return `could not store the playlist ${o.alias}: ${(err as Error).message}`;
        }
      }
      return null;
    } catch (err) {
      return `could not store the outputs: ${(err as Error).message}`;
    }
  }

  private async apply(ref: JobRef, event: RunnerEvent, problem: string | null = null): Promise<void> {
    const command = await this.options.commands.findById(ref.commandId);
    // Events of an earlier attempt (or of a command that already ended) change nothing.
    if (!command || command.status !== CommandStatus.PROCESSING || jobName(command.id, command.currentStep, command.attempt) !== ref.name) {
      if (event.type === 'result') await this.options.backend.deleteJob(ref.name);
      return;
    }
    if (event.type === 'stage') {
      await this.options.commands.update(command.id, { processingStage: event.stage });
      this.options.onCommandChanged?.(command.id);
      this.log(command).info({ step: command.currentStep, stage: event.stage }, 'stage');
      return;
    }
    if (event.type === 'progress') return;

    // The result is recorded first and the Job deleted after: a crash in between re-reads the
    // result (its events go with the Job) instead of losing it.
    try {
      await this.applyResult(command, event, problem);
    } finally {
      await this.options.backend.deleteJob(ref.name);
    }
  }

  private async applyResult(command: CommandRow, event: Extract<RunnerEvent, { type: 'result' }>, problem: string | null): Promise<void> {
    const ffmpegSeconds = command.ffmpegSeconds + (event.ffmpegSeconds ?? 0);
    if (!event.ok) {
      const processedBytes = command.processedBytes + event.inputBytes;
      await this.fail({ ...command, ffmpegSeconds, processedBytes }, event.errorStatus, event.errorMessage);
      return;
    }
    const outputBytes = event.outputs.reduce((sum, o) => sum + o.size, 0);
    const processedBytes = command.processedBytes + event.inputBytes + outputBytes;
    if (problem) {
      await this.fail({ ...command, ffmpegSeconds, processedBytes }, ErrorStatus.OUTPUT_UPLOAD_FAILED, problem);
      return;
    }
    const files: NewFileRow[] = event.outputs.map((o) => {
      const declared = command.outputs.find((d) => d.alias === o.alias)!;
      return {
        id: declared.fileId,
        accountId: command.accountId,
        environmentName: command.environmentName,
        commandId: command.id,
        alias: o.alias,
        serviceStoreType: StoreType.OUTPUT,
        status: FileStatus.STORED,
        storageKey: objectKey({
          isPrivate: command.isPrivate,
          accountId: command.accountId,
          fileId: declared.fileId,
          fileName: declared.fileName,
        }),
        fileName: declared.fileName,
        originalFileUrl: declared.fileName,
        isPrivate: command.isPrivate,
        sizeBytes: o.size,
        fileCount: o.fileCount ?? 1,
        sizeCompressedBytes: o.compressedSize ?? null,
        media: o.media,
      };
    });
    const lastStep = command.currentStep >= command.steps.length - 1;
    if (lastStep) {
      await this.options.commands.completeStep(command.id, files, {
        status: CommandStatus.SUCCESS,
        processingStage: null,
        finishedAt: this.clock(),
        ffmpegSeconds,
        processedBytes,
      });
      this.options.onCommandChanged?.(command.id);
      this.log(command).info({ ffmpeg_seconds: ffmpegSeconds }, 'command succeeded');
      this.kick(); // its vCPUs are free for the next queued command
      return;
    }
    const next = {
      currentStep: command.currentStep + 1,
      attempt: 1,
      ffmpegSeconds,
      processedBytes,
      processingStage: ProcessingStage.DOWNLOADING,
    };
    await this.options.commands.completeStep(command.id, files, next);
    this.options.onCommandChanged?.(command.id);
    this.log(command).info({ step: next.currentStep }, 'step done, starting the next one');
    await this.startStep({ ...command, ...next });
  }

  private async fail(
    command: Pick<CommandRow, 'id' | 'ffmpegSeconds' | 'processedBytes'>,
    errorStatus: ErrorStatus,
    errorMessage: string,
  ): Promise<void> {
    await this.options.commands.update(command.id, {
      status: CommandStatus.FAILED,
      errorStatus,
      errorMessage,
      finishedAt: this.clock(),
      ffmpegSeconds: command.ffmpegSeconds,
      processedBytes: command.processedBytes,
    });
    this.options.onCommandChanged?.(command.id);
    this.log(command).warn({ error_status: errorStatus, error_message: errorMessage }, 'command failed');
    this.kick();
  }

  private log(command: Pick<CommandRow, 'id'>): Logger {
    return this.options.logger.child({ command_id: command.id });
  }
}
