// The one reconcile logic of both modes. Level-triggered: every pass compares what the database says
// (QUEUED/PROCESSING commands) with the jobs that exist and closes the gap, so a restart at any moment
// changes no outcome. Runner events are applied through the same serialised section.
//
// Where to read: reconcileCommand holds every rule for one command; reconcileOnce is the pass that
// reads in batches and calls it; reconcile/command-actions.ts does what a rule decides (start, fail,
// run a step again, record a step's end); reconcile/step-results.ts makes a runner's result ready.
import type { CommandLogsRepo } from '../commands/command-logs-repo.ts';
import type { Logger } from 'pino';
import type { ActiveCommand, CommandRow, QueuedCommand } from '../commands/commands-repo.ts';
import { CommandStatus } from '../commands/command-status.ts';
import { ErrorStatus } from '../commands/error-status.ts';
import { ProcessingStage } from '../jobs/step-spec.ts';
import { admitToCapacity, capacityTaken } from './admission.ts';
import { jobName, type BackendEvent, type JobRef } from './job-backend.ts';
import { prepareResult, runsStep, type PreparedResult, type ResultContext } from './reconcile/step-results.ts';
import { storedProgress } from '../commands/progress.ts';
import { PerKeyThrottle } from './per-key-throttle.ts';
import { StepStateWrites, type StepState } from './step-state-writes.ts';
import type { DatabaseHealth } from '../db/database-health.ts';
import { VCPUS, vcpusOverPlanNow } from '../accounts/plan-rules.ts';
import { SerialPasses } from '../background/serial-passes.ts';
import { SerialSection } from '../background/serial-section.ts';
import { CommandActions, type CommandActionsOptions, type StepEnded } from './reconcile/command-actions.ts';

/** Commands started per pass when the backend has no shared capacity (a cluster's scheduler queues). */
const UNLIMITED_PASS_SIZE = 200;
/** Progress alone changes a command's mirrored state (its FfmpegCommand status) at most this often. */
const PROGRESS_MIRROR_MS = 2000;
/** A step's stage and progress reach its command at most this late (UPLOADING at once): see step-state-writes.ts. */
const STEP_STATE_DELAY_MS = 250;

/** What the reconciler needs: what its actions need (reconcile/command-actions.ts), and the following. */
export interface ReconcilerOptions extends Omit<CommandActionsOptions, 'clock' | 'freed'> {
  clock?: () => Date;
  /** Where runners' pieces of ffmpeg's log go (GET /v1/commands/{id}/log); none: they are dropped. */
  commandLogs?: CommandLogsRepo;
  /**
   * Cluster mode: make sure a command has its FfmpegCommand (created when missing; 'deleted' when the
   * user deleted it). Called for every active command at each resync, and for each command a pass starts.
   */
  ensureResource?: (command: Pick<ActiveCommand, 'id' | 'resourceCreatedAt'>) => Promise<'present' | 'created' | 'deleted'>;
  /** Safety-net pass interval; passes also run whenever something changes. */
  resyncMs?: number;
  /** While the database cannot be reached, passes wait for it (no pass, no log line, every resync). */
  health?: Pick<DatabaseHealth, 'up' | 'failed' | 'whenUp'>;
}

export class Reconciler {
  private readonly options: ReconcilerOptions;
  private readonly clock: () => Date;
  /** Passes and runner events change commands one at a time, here. */
  private readonly section = new SerialSection();
  private readonly passes: SerialPasses;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** The last pass found the shared capacity taken, and nothing has ended since. */
  private capacityFull = false;
  /**
   * QUEUED commands (not in a cluster's queue) as the last pass read them, less those it started;
   * null once anything but freed capacity asked for a pass since. 0: a pass for freed capacity would
   * find nothing to start (see capacityFreed).
   */
  private queuedSinceRead: number | null = null;
  /** Cancels may be waiting: the next pass reads them (the first pass always does). */
  private cancelsAsked = true;
  /** The resync is due: the next pass sweeps (see reconcileOnce). The first pass always does. */
  private sweepDue = true;
  /** Stages and progress are stored outside the serialised section; stop() writes what is held and waits. */
  private readonly stepStates: StepStateWrites;
  /** What is done to a command once reconcileCommand has decided. */
  private readonly act: CommandActions;
  private readonly stopWaitingForUp: (() => void) | undefined;
  private readonly results: ResultContext;
  private readonly progressMirror = new PerKeyThrottle(PROGRESS_MIRROR_MS, () => this.clock().getTime());

  constructor(o: ReconcilerOptions) {
    this.options = o;
    this.clock = o.clock ?? (() => new Date());
    this.act = new CommandActions({ ...o, clock: this.clock, freed: () => this.capacityFreed() });
    this.results = {
      commands: o.commands,
      storage: o.storage,
      limits: o.limits,
      workDir: o.workDir,
      onRefused: (command, step, event) =>
        this.log(command).warn({ step, error_message: event.ok ? '' : event.errorMessage }, 'result refused'),
      onUploadsLeft: (command, step, err) =>
        this.log(command).warn({ step, err: err.message }, 'could not abort the unfinished uploads of a failed step'),
    };
    this.stepStates = new StepStateWrites({
      write: (ref, state) => o.commands.recordStepState(ref, state),
      stored: (ref, state) => this.stepStateStored(ref, state),
      delayMs: STEP_STATE_DELAY_MS,
      logger: o.logger,
      health: o.health,
    });
    // The first pass after an outage sweeps: what ended meanwhile (a step whose result could not be
    // recorded is run again as a lost one) and cancels asked before it. (Registered before the passes,
    // which make that pass.)
    this.stopWaitingForUp = o.health?.whenUp(() => {
      this.sweepDue = true;
      this.cancelsAsked = true;
    });
    this.passes = new SerialPasses(() => this.pass(), o.logger, 'reconcile', { health: o.health, section: this.section });
    // The cluster shows room again (a pod ended, a node came): queued steps may be released.
    o.backend.releaseGate?.onMayOpen(() => {
      if (this.timer) this.kick(); // once started: the operator starts the backend's watches first
    });
    // A result is prepared before the serialised section (reading its command, copying a playlist's
    // files into storage), so slow preparation does not hold up other commands' transitions. Events
    // of one Job stay in order: only its last one, the result, can take long.
    o.backend.subscribe((ref, event) => {
      if (event.type === 'progress') {
        const progress = storedProgress(event);
        if (progress !== null && !this.stopped) this.stepStates.report(ref, { progress });
        return;
      }
      if (event.type === 'log') {
        if (!this.stopped) this.appendLog(ref, event.text);
        return;
      }
      if (event.type === 'stage') {
        // Every step starts at DOWNLOADING: it is recorded when the step is started. A stage that is none is not stored.
        if (event.stage !== ProcessingStage.DOWNLOADING && STAGES.has(event.stage) && !this.stopped)
          this.stepStates.report(ref, { processingStage: event.stage });
        return;
      }
      this.stepStates.forget(ref);
      if (event.type !== 'result') {
        if (!this.stopped) void this.serial(() => this.onBackendEvent(ref, event));
        return;
      }
      // The step's log is stored before its result: a client that sees the command end reads the whole log.
      const logged = this.logWrites.get(ref.name) ?? Promise.resolve();
      void logged
        .then(() => prepareResult(this.results, ref, event))
        .then((prepared) => {
          if (!this.stopped) void this.serial(() => this.applyResult(ref, prepared));
        });
    });
  }

  /** Pieces of one job's log are stored one after the other, in the order they came. */
  private readonly logWrites = new Map<string, Promise<void>>();
  private appendLog(ref: JobRef, text: string): void {
    const logs = this.options.commandLogs;
    if (!logs) return;
    const before = this.logWrites.get(ref.name) ?? Promise.resolve();
    const write = before
      .then(() => logs.append(ref.commandId, ref.step, text))
      // The database away: said once by its health, not for every piece (the piece is lost, the log says less).
      .catch((err: unknown) => {
        if (!this.options.health?.failed(err)) this.options.logger.warn({ err, job: ref.name }, "a piece of ffmpeg's log was not stored");
      })
      .finally(() => {
        if (this.logWrites.get(ref.name) === write) this.logWrites.delete(ref.name);
      });
    this.logWrites.set(ref.name, write);
  }

  start(): void {
    this.kick();
    // The resync sweeps, and looks for cancels in case a notification was missed.
    this.timer = setInterval(() => {
      this.sweepDue = true;
      this.cancelRequested();
    }, this.options.resyncMs ?? 2000);
    this.timer.unref();
  }

  /**
   * A cancel was asked through the API (directly, or by its notification from another process): the
   * next pass looks for cancelled commands. Other passes skip that read; the resync always makes it,
   * in case a notification was missed.
   */
  cancelRequested(): void {
    this.cancelsAsked = true;
    this.kick();
  }

  /** Asks for a pass soon; many kicks before it runs make one pass. */
  kick(): void {
    this.capacityFull = false;
    this.queuedSinceRead = null;
    this.passes.kick();
  }

  /**
   * Capacity was freed (a step is past ffmpeg, a command ended): a pass, unless no command was left
   * waiting at the last pass and nothing that could queue one came since (a submit, a requeue: any
   * other kick makes its pass as before). On the embedded database a pass's read costs the service
   * milliseconds of CPU; one command at a time then makes one pass instead of three. The resync
   * still passes every resyncMs.
   */
  private capacityFreed(): void {
    if (this.queuedSinceRead !== 0) return this.kick();
    this.capacityFull = false; // a submit now makes its pass
  }

  private async pass(): Promise<void> {
    // Cleared before the read: a cancel asked while it runs asks for another pass.
    const checkCancels = this.cancelsAsked;
    const sweep = this.sweepDue;
    this.cancelsAsked = false;
    this.sweepDue = false;
    await this.reconcileOnce({ checkCancels, sweep });
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
    this.stopWaitingForUp?.();
    await this.passes.stop();
    await this.section.idle();
    await Promise.all([this.stepStates.flush(), this.act.idle()]);
  }

  /** Runs a runner event's work (or a cancel) between the passes. */
  private serial(work: () => Promise<void>): Promise<void> {
    return this.section.run(work).catch((err: unknown) => {
      // For want of the database: a kick now waits for it, and the pass after it sweeps.
      if (this.options.health?.failed(err)) this.kick();
      else this.options.logger.error({ err }, 'reconcile step failed; the next pass retries');
    });
  }

  /** Stops a command's Job and fails it (cluster mode: its FfmpegCommand was deleted). */
  cancel(commandId: string, message: string): Promise<void> {
    return this.serial(async () => {
      const command = await this.options.commands.findById(commandId);
      if (!command || (command.status !== CommandStatus.QUEUED && command.status !== CommandStatus.PROCESSING)) return;
      await this.reconcileCommand(command, { cancel: message });
    });
  }

  /**
   * One pass: what the database says against the jobs that exist, each command brought in line by
   * reconcileCommand. The pass reads in batches (every cancelled command in one query, the Jobs in one
   * listing, the queue's admissible head in one query) and admits queued commands together, as they
   * share the capacity. `checkCancels: false` skips looking for cancels (none was asked since the last
   * look). `sweep: false` skips what only the resync needs to look at: every active command's
   * FfmpegCommand (a pass makes sure only of those it starts; the watch reports deletions at once),
   * steps waiting in the cluster's queue, commands larger than every node, and commands over a plan
   * lowered since they were submitted. Passes asked for by events then cost a few small reads, however
   * long the queue.
   */
  async reconcileOnce(o: { checkCancels: boolean; sweep: boolean } = { checkCancels: true, sweep: true }): Promise<void> {
    const { commands, backend } = this.options;
    // Cancels asked through the API come first: what they free is free for this very pass.
    for (const command of o.checkCancels ? await commands.cancelRequested() : [])
      await this.reconcileCommand(command, { cancel: 'cancelled through the API' });
    // Cluster mode: the commands whose FfmpegCommand this pass made sure of. Any other is made sure of
    // before it starts: without its resource, its Job would have no owner.
    const ensured = new Set<string>();
    if (this.options.ensureResource && o.sweep) {
      for (const command of await commands.active()) {
        const resource = await this.options.ensureResource(command);
        if (resource !== 'deleted') ensured.add(command.id);
        await this.reconcileCommand(command, { resource });
      }
    }
    const jobs = await backend.listJobNames();
    const jobExists = (c: ActiveCommand) => jobs.has(jobName(c.id, c.currentStep, c.attempt));
    for (const command of backend.queuesInCluster && o.sweep ? await commands.inClusterQueueNow() : [])
      await this.reconcileCommand(command, { jobExists: jobExists(command) });
    const largestStepVcpus = (o.sweep ? backend.maxStepVcpus?.() : null) ?? null;
    if (largestStepVcpus !== null)
      for (const command of await commands.queuedAbove(largestStepVcpus)) await this.reconcileCommand(command, { largestStepVcpus });
    const capacity = backend.capacityVcpus;
    const gate = backend.releaseGate;
    // The database prefilters the queue by each account's plan; every candidate uses at least one
    // vCPU of the shared capacity, so capacity + 1 rows are all a pass can start or stop at.
    const passSize = () =>
      capacity === null ? Math.max(0, Math.min(UNLIMITED_PASS_SIZE, gate ? gate.releasable() : Infinity)) : capacity + 1;
    // What runs and what may start, read together (one statement); read again when a rule changed either.
    let limit = passSize();
    let read = await commands.runningAndAdmissible(limit);
    this.queuedSinceRead = read.queued; // a kick from now on clears it
    const lost = read.running.filter((command) => !jobExists(command));
    for (const command of lost) await this.reconcileCommand(command, { jobExists: false });
    if (lost.length > 0) {
      read = await commands.runningAndAdmissible((limit = passSize()));
      this.queuedSinceRead = read.queued;
    }
    const running = read.running;
    let candidates = read.admissible;
    // While the shared capacity is taken (or the cluster shows no room) nothing can start.
    const releasable = gate ? gate.releasable() : Infinity;
    this.capacityFull = (capacity !== null && capacityTaken(running, capacity)) || releasable <= 0;
    if (this.capacityFull) return;
    // A plan lowered after submission: a command that can never fit would block its account forever.
    const overPlan = o.sweep ? await commands.overPlan() : [];
    for (const command of overPlan) await this.reconcileCommand(command, {});
    if (overPlan.length > 0) candidates = await commands.admissible(limit);
    if (candidates.length === 0) return;
    const admitted =
      capacity === null && gate?.maxVcpus != null
        ? // A cap on a shared cluster counts every vCPU a released pod asks for, finishing or not.
          admitToCapacity(
            running.map((c) => ({ ...c, finishing: false })),
            candidates,
            gate.maxVcpus,
          )
        : admitToCapacity(running, candidates, capacity);
    for (const id of admitted) {
      const candidate = candidates.find((c) => c.id === id)!;
      await this.reconcileCommand(candidate, { admitted: true, resourceEnsured: ensured.has(id) });
      // It waits no more: started, failed, handed to the cluster's queue, or not QUEUED any more
      // (a command it could not start kicked, which cleared the count).
      if (this.queuedSinceRead !== null) this.queuedSinceRead--;
    }
    // Without a shared capacity every candidate starts; more may wait behind this pass's batch.
    if (capacity === null && candidates.length === limit && admitted.length === limit) this.kick();
  }

  /**
   * Every rule for one command, in the manner of a controller's Reconcile: from its row and what was
   * seen of it (`seen`, read by the pass in batches or brought by its Job's event), decide and act.
   * Idempotent: it runs in the serialised section on rows read there, and what it does moves the row
   * on, so seeing the same again (the next pass, a restart) finds nothing left to do. The pass calls
   * it with light rows: an active
   * command's (status, step, attempt) or a queued one's as the queue's reads see it (with its plan's
   * limit now).
   */
  async reconcileCommand(command: ActiveCommand | QueuedCommand, seen: Seen): Promise<void> {
    if (!isActive(command)) {
      // A plan lowered after submission: it can never fit, and would block its account forever.
      if (!VCPUS.allows(command.vcpuCount, command.planMaxVcpus)) {
        await this.act.fail(
          { id: command.id, ffmpegSeconds: 0, processedBytes: 0 },
          ErrorStatus.PLAN_LIMIT_EXCEEDED,
          vcpusOverPlanNow(command.vcpuCount, command.planMaxVcpus),
        );
        return;
      }
      // Admission chose it: it starts (Kueue mode: its Job waits in the cluster's queue).
      if (seen.admitted) await this.admit(command, seen.resourceEnsured ?? false);
      return;
    }
    // Stopped by its user: its job is deleted and it fails CANCELLED; outputs of finished steps stay.
    if (seen.cancel !== undefined) return this.act.stopCancelled(command, seen.cancel);
    if (seen.resource === 'deleted')
      return this.act.stopCancelled(command, 'its FfmpegCommand resource was deleted; the command was stopped');
    if (command.status === CommandStatus.PROCESSING) {
      // Its step ended: the command succeeds, goes on to its chain's next step, or fails.
      if (seen.stepEnded) return this.act.stepEnded(seen.stepEnded);
      // Its step's job is gone (the process restarted), or its pod was lost with its node: the step runs
      // again as a new attempt, or after maxAttempts the command fails INTERRUPTED.
      if (seen.jobExists === false) return this.act.runStepAgain(command, 'its job was lost (the service restarted while it ran?)');
      if (seen.podLost !== undefined) return this.act.runStepAgain(command, seen.podLost, seen.podLostMaxStarts);
      return; // it runs: its deadline is its Job's (CommandActions.startStep)
    }
    // QUEUED. Kueue mode: a step waiting in the cluster's queue whose Job went (deleted by hand, say) gets it again.
    if (command.inClusterQueue) {
      if (seen.jobExists !== false) return;
      const row = await this.options.commands.findById(command.id);
      if (row?.inClusterQueue) await this.act.startStep(row);
      return;
    }
    // Larger than every node: it fails at once, whatever waits before it in the queue.
    if (seen.largestStepVcpus !== undefined && command.vcpuCount > seen.largestStepVcpus) {
      await this.act.fail(
        command,
        ErrorStatus.UNSCHEDULABLE,
        this.options.backend.unfit?.({ vcpus: command.vcpuCount }) ?? `vcpu_count ${command.vcpuCount} is more than any node has`,
      );
    }
  }

  /** Starts an admitted command, once its FfmpegCommand is made sure of (cluster mode). */
  private async admit(candidate: QueuedCommand, resourceEnsured: boolean): Promise<void> {
    if (this.options.ensureResource && !resourceEnsured && (await this.options.ensureResource(candidate)) === 'deleted') {
      // The sweep stops it, as it stops every command whose resource was deleted.
      this.sweepDue = true;
      this.kick();
      return;
    }
    await this.act.start(candidate);
  }

  /** The backend lost the step's pod (its node died or was drained): run the step again, or give up. */
  private async retryLost(ref: JobRef, reason: string, maxStarts?: number): Promise<void> {
    const command = await this.options.commands.findById(ref.commandId);
    if (!runsStep(command, ref)) return;
    await this.reconcileCommand(command, { podLost: reason, podLostMaxStarts: maxStarts });
    this.act.deleteFinishedJob(ref.name);
  }

  private async onBackendEvent(ref: JobRef, event: BackendEvent): Promise<void> {
    switch (event.type) {
      case 'requeue':
        return this.requeue(ref, event.reason);
      case 'lost':
        return this.retryLost(ref, event.reason, event.maxStarts);
      case 'released':
        return this.released(ref);
      case 'suspended':
        return this.suspendedAgain(ref, event.reason);
    }
  }

  /** Kueue mode: Kueue resumed the step's Job, so the command runs (its deadline counts from now). */
  private async released(ref: JobRef): Promise<void> {
    const now = this.clock();
    const command = await this.options.commands.startReleased(ref, now);
    if (!command) return;
    this.options.onCommandChanged?.(command.id);
    this.log(command).info({ step: ref.step, vcpu_count: command.vcpuCount }, 'command released by the cluster queue');
    this.options.onCommandEvent?.(command.id, { reason: 'Started', message: `step ${ref.step + 1} released by Kueue`, warning: false });
  }

  /** Kueue mode: Kueue suspended the running step's Job again (preempted, evicted): QUEUED till it resumes it. */
  private async suspendedAgain(ref: JobRef, reason: string): Promise<void> {
    if (!(await this.options.commands.requeue(ref, reason, { inClusterQueue: true }))) return;
    this.log({ id: ref.commandId }).warn({ step: ref.step, reason }, 'step suspended by the cluster queue');
    this.options.onCommandEvent?.(ref.commandId, { reason: 'Requeued', message: `back in the queue: ${reason}`, warning: true });
    this.options.onCommandChanged?.(ref.commandId);
  }

  /** A released step's pod finds no room: back to the queue, at its place, with no job and so no deadline running. */
  private async requeue(ref: JobRef, reason: string): Promise<void> {
    if (!(await this.options.commands.requeue(ref, reason))) return;
    this.queuedSinceRead = null; // it waits for the next freed capacity
    this.act.deleteFinishedJob(ref.name);
    this.log({ id: ref.commandId }).warn({ step: ref.step, attempt: ref.attempt, reason }, 'step sent back to the queue');
    this.options.onCommandEvent?.(ref.commandId, { reason: 'Requeued', message: `back in the queue: ${reason}`, warning: true });
    this.options.onCommandChanged?.(ref.commandId);
  }

  private async applyResult(ref: JobRef, prepared: PreparedResult): Promise<void> {
    // The result is recorded first and the Job deleted after: a crash in between re-reads the
    // result (its events go with the Job) instead of losing it. If the command could not be read,
    // the Job goes too, and a later pass runs the step again as a lost one.
    try {
      if (prepared.readError) throw prepared.readError;
      // A late result (an earlier attempt's, or of a command that ended) changes nothing.
      if (prepared.command)
        await this.reconcileCommand(prepared.command, {
          stepEnded: { ref, command: prepared.command, event: prepared.event, problem: prepared.problem },
        });
    } finally {
      this.act.deleteFinishedJob(ref.name);
    }
  }

  /** A step's stage or progress was stored (see step-state-writes.ts). */
  private stepStateStored(ref: JobRef, state: StepState): void {
    if (state.processingStage !== undefined) {
      this.options.onCommandChanged?.(ref.commandId);
      this.log({ id: ref.commandId }).info({ step: ref.step, stage: state.processingStage }, 'stage');
      // Past ffmpeg: if it was the last step, its share of the capacity is free (see admission.ts).
      if (state.processingStage === ProcessingStage.UPLOADING) this.capacityFreed();
    } else if (this.options.onCommandChanged && this.progressMirror.allow(ref.commandId)) {
      // Progress alone: the mirror (cluster mode: a write to the FfmpegCommand's status) follows at most every PROGRESS_MIRROR_MS.
      this.options.onCommandChanged(ref.commandId);
    }
  }

  private log(command: Pick<CommandRow, 'id'>): Logger {
    return this.options.logger.child({ command_id: command.id });
  }
}

const STAGES = new Set<string>(Object.values(ProcessingStage));

/** What was seen of a command beyond its row (see reconcileCommand); a fact left out was not looked at. */
export interface Seen {
  /** Why it is to stop: a cancel asked through the API, or (cluster mode) its FfmpegCommand deleted. */
  cancel?: string;
  /** Cluster mode: its FfmpegCommand, as the sweep made sure of it ('deleted': its user deleted it). */
  resource?: 'present' | 'created' | 'deleted';
  /** Whether the Job of its current step and attempt exists. */
  jobExists?: boolean;
  /** The most vCPUs a step can have on any node. */
  largestStepVcpus?: number;
  /** Admission chose it to start now; resourceEnsured: this pass made sure of its FfmpegCommand. */
  admitted?: boolean;
  resourceEnsured?: boolean;
  /** Its step's result, prepared before the serialised section (see reconcile/step-results.ts). */
  stepEnded?: StepEnded;
  /** The backend lost its step's pod (its node died or was drained): why. */
  podLost?: string;
  /** The most starts the backend allows a step lost that way (embedded: a runner that died runs again once). */
  podLostMaxStarts?: number;
}

/** A row of the active commands' reads (status, step, attempt), not of the queue's (plan's limit). */
function isActive(command: ActiveCommand | QueuedCommand): command is ActiveCommand {
  return 'status' in command;
}
