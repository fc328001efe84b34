// What the reconciler does to a command once reconcileCommand has decided: start it, start its step
// (its deadline is its Job's), run a lost step again, record a step's end (the command succeeds or goes
// on to its chain's next step), fail it, stop it when cancelled.
import type { Logger } from 'pino';
import type { ActiveCommand, CommandRow, NewCommandRow, QueuedCommand } from '../../commands/commands-repo.ts';
import { withStepEnded } from '../../commands/timings.ts';
import { CommandStatus } from '../../commands/command-status.ts';
import { ErrorStatus } from '../../commands/error-status.ts';
import { ProcessingStage } from '../../jobs/step-spec.ts';
import { isDatabaseUnavailable } from '../../db/unavailable.ts';
import { jobName, type JobRef } from '../job-backend.ts';
import { buildStepSpec, stepDeadlineSeconds } from '../step-spec-builder.ts';
import type { CommandsRepo } from '../../commands/commands-repo.ts';
import type { Storage } from '../../storage/storage.ts';
import type { JobBackend } from '../job-backend.ts';
import type { RunLimits } from '../step-spec-builder.ts';
import type { EngineMetrics } from '../../metrics/metrics.ts';
import { outputFileRows, runsStep, type ResultEvent } from './step-results.ts';
import { abortOutputUploads } from '../output-uploads.ts';
import { jobToken } from '../../jobs/job-token.ts';

export interface CommandActionsOptions {
  commands: CommandsRepo;
  backend: JobBackend;
  storage: Storage;
  logger: Logger;
  limits: RunLimits;
  clock: () => Date;
  /**
   * Times a step is started before a command whose step keeps being lost is given up (FAILED,
   * INTERRUPTED): the service restarted under it, or its pod was lost with its node. Steps sent back
   * to the queue for want of room are not counted.
   */
  maxAttempts?: number;
  /** Scratch space (unpacking playlists). */
  workDir: string;
  /** Called after every change of a command's state (cluster mode mirrors it into the resource). */
  onCommandChanged?: (commandId: string) => void;
  /** Something a person watching the command should hear of (cluster mode: a Kubernetes Event on its resource). */
  onCommandEvent?: (commandId: string, event: { reason: string; message: string; warning: boolean }) => void;
  /** Prometheus metrics: commands admitted and ended. */
  metrics?: EngineMetrics;
  /** A command ended: what it held is free (a pass follows if something may wait for it). */
  freed: () => void;
}

/** A step's result: the command's full row as read with it (the outputs are stored from it). */
export interface StepEnded {
  ref: JobRef;
  command: CommandRow;
  event: ResultEvent;
  problem: string | null;
}

export class CommandActions {
  private readonly o: CommandActionsOptions;
  private readonly clock: () => Date;
  /** Jobs whose result is recorded, being deleted outside the serialised section; idle() waits for them. */
  private readonly deletions = new Set<Promise<void>>();

  constructor(o: CommandActionsOptions) {
    this.o = o;
    this.clock = o.clock;
  }

  /** Starts an admitted command (Kueue mode: hands its Job to the cluster's queue). */
  async start(candidate: QueuedCommand): Promise<void> {
    const id = candidate.id;
    if (this.o.backend.queuesInCluster) {
      // Kueue mode: its Job is made suspended and Kueue releases it; the command stays QUEUED till then.
      const handed = await this.o.commands.queueInCluster(id);
      if (!handed) return;
      this.log(handed).info({ vcpu_count: handed.vcpuCount }, 'command handed to the cluster queue');
      await this.startStep(handed, candidate.plan);
      return;
    }
    // The pass reads light rows; the started command's row has its steps and outputs.
    const startedAt = this.clock();
    const command = await this.o.commands.startQueued(id, { processingStage: ProcessingStage.DOWNLOADING }, startedAt);
    if (!command) return;
    this.o.onCommandChanged?.(command.id);
    this.log(command).info({ vcpu_count: command.vcpuCount }, 'command admitted');
    this.o.onCommandEvent?.(command.id, {
      reason: 'Started',
      message: `started on ${command.vcpuCount} vCPU${command.vcpuCount > 1 ? 's' : ''}: step 1 of ${command.steps.length}`,
      warning: false,
    });
    this.o.metrics?.commandAdmitted(candidate.plan, secondsSince(command.createdAt, startedAt));
    await this.startStep(command, candidate.plan);
  }

  async startStep(command: CommandRow, plan?: string): Promise<void> {
    const ref: JobRef = {
      name: jobName(command.id, command.currentStep, command.attempt),
      commandId: command.id,
      step: command.currentStep,
      attempt: command.attempt,
    };
    try {
      const spec = await buildStepSpec(command, command.currentStep, this.o.storage, this.o.limits);
      const plans = this.o.limits.outputMultipart?.plans;
      if (plans) spec.uploadPlans = { url: plans.url, jobName: ref.name, token: jobToken(plans.tokenSecret, ref.name) };
      const request = {
        ref,
        spec,
        vcpus: command.vcpuCount,
        deadlineSeconds: stepDeadlineSeconds(command, this.o.limits),
        accountId: command.accountId,
        // Kueue mode picks the Job's priority class by plan; a later step reads it again.
        plan: plan ?? (this.o.backend.queuesInCluster ? ((await this.o.commands.planOf(command.accountId)) ?? undefined) : undefined),
        knownInputBytes: command.currentStep > 0 ? await this.earlierOutputBytes(command) : 0,
      };
      // Waiting for a node larger than any there is would only end at the deadline.
      const unfit = this.o.backend.unfit?.(request) ?? null;
      if (unfit) {
        await this.fail(command, ErrorStatus.UNSCHEDULABLE, unfit);
        return;
      }
      await this.o.backend.ensureJob(request);
    } catch (err) {
      // An outage is not the command's failure: without its job, a pass after it runs the step as a lost one.
      if (isDatabaseUnavailable(err)) throw err;
      await this.fail(command, ErrorStatus.INTERNAL_ERROR, `could not start step ${command.currentStep + 1}: ${(err as Error).message}`);
    }
  }

  /** Bytes of the files earlier steps stored: what a later step's inputs can be at most. */
  async earlierOutputBytes(command: CommandRow): Promise<number> {
    return (await this.o.commands.outputFiles(command.id)).reduce((sum, f) => sum + (f.sizeBytes ?? 0), 0);
  }

  /**
   * Runs a lost step again as its next attempt, with the command's record unchanged but for its stage;
   * after maxAttempts starts of the step the command fails INTERRUPTED instead. ffmpeg's own failures
   * never come here: they are results.
   */
  async runStepAgain(
    command: Pick<CommandRow, 'id' | 'currentStep' | 'attempt' | 'stepRetries' | 'ffmpegSeconds' | 'processedBytes'>,
    reason: string,
    maxStarts?: number,
  ): Promise<void> {
    const maxAttempts = Math.min(maxStarts ?? Infinity, this.o.maxAttempts ?? 3);
    const started = command.stepRetries + 1;
    if (started >= maxAttempts) {
      await this.fail(
        command,
        ErrorStatus.INTERRUPTED,
        `step ${command.currentStep + 1} was started ${started} times and lost each time; it was not tried again (last: ${reason})`,
      );
      return;
    }
    const attempt = command.attempt + 1;
    this.log(command).warn({ step: command.currentStep, attempt, reason }, 'step lost, running it again');
    this.o.onCommandEvent?.(command.id, {
      reason: 'StepRetried',
      message: `step ${command.currentStep + 1} runs again as attempt ${attempt}: ${reason}`,
      warning: true,
    });
    await this.o.commands.update(command.id, {
      attempt,
      stepRetries: command.stepRetries + 1,
      processingStage: ProcessingStage.DOWNLOADING,
      progress: null,
      // Kueue mode: the new attempt's Job waits in the cluster's queue again.
      ...(this.o.backend.queuesInCluster
        ? { status: CommandStatus.QUEUED, inClusterQueue: true, processingStage: null, stepStartedAt: null }
        : {}),
    });
    const row = await this.o.commands.findById(command.id);
    if (!row) return;
    await this.abortStepUploads(row, command.currentStep);
    await this.startStep(row);
  }

  /** The uploads a lost or stopped step left (output-uploads.ts). */
  private abortStepUploads(command: CommandRow, step: number): Promise<void> {
    return abortOutputUploads(this.o.storage, this.o.limits.outputMultipart, command, step, (err) =>
      this.log(command).warn({ step, err: err.message }, 'could not abort the unfinished uploads of a step'),
    );
  }

  /** `command` was read before the serialised section: a success is stored only if its step still runs. */
  async stepEnded({ ref, command, event, problem }: StepEnded): Promise<void> {
    const ffmpegSeconds = command.ffmpegSeconds + (event.ffmpegSeconds ?? 0);
    const now = this.clock();
    // Stored with the result, in the same write.
    const timings = withStepEnded({ ...command, step: command.currentStep, ...event }, now);
    // A failure is stored without a condition: the command is read again here, where nothing else
    // changes it, in case it was cancelled since (failures are rare; successes skip this read).
    if (!event.ok) {
      if (runsStep(await this.o.commands.findById(ref.commandId), ref)) {
        await this.fail(
          { ...command, ffmpegSeconds, processedBytes: command.processedBytes + event.inputBytes },
          event.errorStatus,
          event.errorMessage,
          { timings },
        );
      }
      return;
    }
    const outputBytes = event.outputs.reduce((sum, o) => sum + o.size, 0);
    const processedBytes = command.processedBytes + event.inputBytes + outputBytes;
    if (problem) {
      if (runsStep(await this.o.commands.findById(ref.commandId), ref))
        await this.fail({ ...command, ffmpegSeconds, processedBytes }, ErrorStatus.OUTPUT_UPLOAD_FAILED, problem, { timings });
      return;
    }
    const files = outputFileRows(command, event);
    const lastStep = command.currentStep >= command.steps.length - 1;
    const stepSucceeded = {
      reason: 'StepSucceeded',
      message: `step ${command.currentStep + 1} of ${command.steps.length} succeeded`,
      warning: false,
    };
    if (lastStep) {
      const stored = await this.o.commands.completeStep(ref, files, {
        status: CommandStatus.SUCCESS,
        processingStage: null,
        progress: null,
        finishedAt: now,
        ffmpegSeconds,
        processedBytes,
        timings,
      });
      if (!stored) return;
      this.o.onCommandChanged?.(command.id);
      this.log(command).info({ ffmpeg_seconds: ffmpegSeconds }, 'command succeeded');
      this.o.onCommandEvent?.(command.id, stepSucceeded);
      this.o.onCommandEvent?.(command.id, {
        reason: 'Succeeded',
        message: `succeeded; ffmpeg ran ${ffmpegSeconds.toFixed(1)} s`,
        warning: false,
      });
      this.o.freed(); // its vCPUs are free for the next queued command (of its account's plan, and of the capacity)
      await this.recordEnd(command, CommandStatus.SUCCESS, null, ffmpegSeconds);
      return;
    }
    const next = {
      currentStep: command.currentStep + 1,
      attempt: 1,
      ffmpegSeconds,
      processedBytes,
      processingStage: ProcessingStage.DOWNLOADING,
      progress: null, // the next step's ffmpeg has not reported yet
      timings,
      stepStartedAt: now as Date | null,
      // Kueue mode: the next step's Job waits in the cluster's queue like the first did (and starts when released).
      ...(this.o.backend.queuesInCluster
        ? { status: CommandStatus.QUEUED, inClusterQueue: true, processingStage: null, stepStartedAt: null }
        : {}),
    };
    if (!(await this.o.commands.completeStep(ref, files, next))) return;
    this.o.onCommandChanged?.(command.id);
    this.o.onCommandEvent?.(command.id, stepSucceeded);
    this.log(command).info({ step: next.currentStep }, 'step done, starting the next one');
    await this.startStep({ ...command, ...next });
  }

  async fail(
    command: Pick<CommandRow, 'id' | 'ffmpegSeconds' | 'processedBytes'> & Partial<Pick<CommandRow, 'createdAt'>>,
    errorStatus: ErrorStatus,
    errorMessage: string,
    /** A step's result that fails the command: its timings, stored in the same write. */
    also: Pick<NewCommandRow, 'timings'> = {},
  ): Promise<void> {
    await this.o.commands.update(command.id, {
      ...also,
      status: CommandStatus.FAILED,
      errorStatus,
      errorMessage,
      progress: null,
      finishedAt: this.clock(),
      ffmpegSeconds: command.ffmpegSeconds,
      processedBytes: command.processedBytes,
    });
    this.o.onCommandChanged?.(command.id);
    this.log(command).warn({ error_status: errorStatus, error_message: errorMessage }, 'command failed');
    this.o.onCommandEvent?.(command.id, { reason: 'Failed', message: `${errorStatus}: ${errorMessage}`, warning: true });
    this.o.freed();
    await this.recordEnd(command, CommandStatus.FAILED, errorStatus, command.ffmpegSeconds);
  }

  /** Metrics of an ended command. Light rows (ActiveCommand) have no createdAt: it is read then. */
  async recordEnd(
    command: Pick<CommandRow, 'id'> & Partial<Pick<CommandRow, 'createdAt'>>,
    status: typeof CommandStatus.SUCCESS | typeof CommandStatus.FAILED,
    errorStatus: ErrorStatus | null,
    ffmpegSeconds: number,
  ): Promise<void> {
    const metrics = this.o.metrics;
    if (!metrics) return;
    try {
      const createdAt = command.createdAt ?? (await this.o.commands.findById(command.id))?.createdAt;
      metrics.commandEnded(status, errorStatus, ffmpegSeconds, createdAt ? secondsSince(createdAt, this.clock()) : 0);
    } catch (err) {
      this.log(command).warn({ err }, 'could not record the metrics of the ended command');
    }
  }

  /** Stops a command's job if one runs, and fails the command CANCELLED; outputs of finished steps stay. */
  async stopCancelled(command: ActiveCommand, message: string): Promise<void> {
    if (command.status === CommandStatus.PROCESSING || command.inClusterQueue)
      await this.o.backend.deleteJob(jobName(command.id, command.currentStep, command.attempt));
    await this.fail(command, ErrorStatus.CANCELLED, message);
    if (command.status === CommandStatus.PROCESSING && this.o.limits.outputMultipart !== undefined) {
      const row = await this.o.commands.findById(command.id);
      if (row) await this.abortStepUploads(row, command.currentStep);
    }
  }

  /**
   * Outside the serialised section: the pass this result asked for (a vCPU is free) does not wait for
   * the deletion (in cluster mode a request to the API server, tens of milliseconds under load).
   */
  deleteFinishedJob(name: string): void {
    const deletion = this.o.backend
      .deleteJob(name)
      .catch((err: unknown) => this.o.logger.warn({ err, job: name }, 'could not delete a finished job'))
      .finally(() => this.deletions.delete(deletion));
    this.deletions.add(deletion);
  }

  /** Resolves once the jobs being deleted are. */
  async idle(): Promise<void> {
    await Promise.all([...this.deletions]);
  }

  log(command: Pick<CommandRow, 'id'>): Logger {
    return this.o.logger.child({ command_id: command.id });
  }
}

function secondsSince(from: Date, to: Date): number {
  return (to.getTime() - from.getTime()) / 1000;
}
