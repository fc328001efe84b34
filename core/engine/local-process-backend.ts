// Embedded mode's job backend: each job goes to a runner child process, as its StepSpec in one JSON
// line on stdin; the runner reports RunnerEvents as JSON lines on stdout. Finished jobs are kept (like
// Kubernetes Jobs) until the reconciler deletes them, so a result is never mistaken for a lost job.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { RunnerEvent } from '../jobs/step-spec.ts';
import { runnerEnv, runnerNodeArgs, type RunnerSettings } from '../jobs/runner-contract.ts';
import { ErrorStatus } from '../commands/error-status.ts';
import type { BackendEvent, JobBackend, JobListener, JobRef, JobRequest } from './job-backend.ts';
import type { UidPool } from '../confine/uid-pool.ts';
import { setSessionNiceness } from '../confine/session-priority.ts';

const RUNNER_ARGS = runnerNodeArgs();
const STDERR_TAIL = 4096;
/** Jobs a runner works on before it is replaced: bounds what a slow leak in a long-lived runner could grow to. */
const JOBS_PER_RUNNER = 200;
const KILL_GRACE_MS = 5000;
/** A step whose runner died without a result starts at most this often (once more). */
export const RUNNER_DEATH_MAX_STARTS = 2;
/**
 * Runners (and the ffmpeg they start) run at a lower CPU priority than the service, so requests,
 * admissions and results are not held up behind encodes on the same cores. ffmpeg loses nothing
 * when the service is idle. Through nice(1): every thread of the runner starts at that priority; and
 * for the runner's session too, which would otherwise be ranked as nice 0 (session-priority.ts).
 */
const RUNNER_NICENESS = 10;

interface RunnerProcess {
  child: ChildProcess;
  /** The end of what it wrote to stderr during its current job (cleared for each job). */
  stderrTail: string;
  startError: Error | null;
  /** The job it works on; null while it waits for one. */
  job: LocalJob | null;
  jobsTaken: number;
}

interface LocalJob {
  ref: JobRef;
  runner: RunnerProcess | null;
  finished: boolean;
  deadline: NodeJS.Timeout | null;
}

export interface LocalProcessBackendOptions {
  logger: Logger;
  /** Folder under which each runner makes its working folders. */
  workRoot: string;
  /** Defaults to the machine's cores. */
  capacityVcpus?: number;
  /** Settings every runner gets (limits, the confinement it need not check again, the hand-off folder). */
  runner?: RunnerSettings;
  /** As root: each runner's ffmpeg gets a uid of its own from here (sandboxUid), held until the runner is gone. */
  uids?: UidPool;
  /**
   * Keep runners alive between jobs, and one started ahead: a job then skips the runner's start (node,
   * its modules and its confinement, about 0.2 s of CPU that would compete with ffmpeg). A runner works
   * on one job at a time, in a fresh working folder each time, and keeps its uid: jobs that run at the
   * same time never share one. A runner stopped for a deadline or a deletion is not used again.
   */
  warmRunner?: boolean;
}

export class LocalProcessBackend implements JobBackend {
  readonly capacityVcpus: number;
  private readonly jobs = new Map<string, LocalJob>();
  private readonly listeners: JobListener[] = [];
  private readonly opts: LocalProcessBackendOptions;

  /** Runners waiting on stdin for their next job's spec, modules loaded. */
  private idle: RunnerProcess[] = [];
  private closed = false;

  constructor(opts: LocalProcessBackendOptions) {
    this.opts = opts;
    this.capacityVcpus = opts.capacityVcpus ?? availableParallelism();
    if (opts.warmRunner) this.idle.push(this.startRunner());
  }

  /** An idle runner that is still alive (and a spare started behind the last one), else a new runner. */
  private takeRunner(): RunnerProcess {
    let runner: RunnerProcess | undefined;
    while ((runner = this.idle.pop()) !== undefined && !alive(runner)) stopProcessGroup(runner.child);
    runner ??= this.startRunner();
    if (this.opts.warmRunner && this.idle.length === 0) {
      // Off the job's critical path: the next runner loads while this one works.
      setImmediate(() => {
        if (!this.closed && this.idle.length === 0) this.idle.push(this.startRunner());
      });
    }
    return runner;
  }

  /** A runner whose job ended with a result waits for the next job, if it may be kept. */
  private release(runner: RunnerProcess): void {
    runner.job = null;
    // As many idle runners as can work at once, plus the spare. At once: one job per core running ffmpeg
    // and, beside each, one finishing (storing its outputs; admission lets the next job start then).
    // With fewer, a runner would be stopped here only for a new one to be started for a later job
    // (about 0.2 s of CPU each time); more would hold memory and uids for nothing.
    const keep = this.opts.warmRunner && !this.closed && alive(runner) && runner.jobsTaken < JOBS_PER_RUNNER;
    if (keep && this.idle.length < 2 * this.capacityVcpus + 1) this.idle.push(runner);
    else runner.child.stdin!.end(); // no more specs: it exits
  }

  private startRunner(): RunnerProcess {
    const uid = this.opts.uids?.acquire();
    const child = spawn('nice', ['-n', String(RUNNER_NICENESS), process.execPath, ...RUNNER_ARGS], {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // own process group, so a deadline can stop the runner and nothing else
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...runnerEnv({ workRoot: this.opts.workRoot, ...this.opts.runner, sandboxUid: uid }),
      },
    });
    setSessionNiceness(child.pid, RUNNER_NICENESS);
    const runner: RunnerProcess = { child, stderrTail: '', startError: null, job: null, jobsTaken: 0 };
    if (uid !== undefined) child.once('close', () => this.opts.uids?.release(uid));
    child.once('error', (err) => (runner.startError = err));
    child.stdin.on('error', () => {}); // a runner that dies early closes its stdin; the exit handler reports it
    child.stderr.on('data', (chunk: Buffer) => {
      runner.stderrTail = (runner.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    // One reader for the runner's life: each line belongs to the job it works on at that moment.
    createInterface({ input: child.stdout }).on('line', (line) => {
      const job = runner.job;
      if (job === null) return;
      let event: RunnerEvent;
      try {
        event = JSON.parse(line) as RunnerEvent;
      } catch {
        this.opts.logger.warn({ job: job.ref.name, line: line.slice(0, 200) }, 'runner printed a line that is not an event');
        return;
      }
      this.emit(job, event);
      if (event.type === 'result') {
        if (job.deadline) clearTimeout(job.deadline);
        job.runner = null;
        this.release(runner);
      }
    });
    child.on('close', (code, signal) => {
      this.idle = this.idle.filter((r) => r !== runner);
      const job = runner.job;
      if (job === null) return;
      if (job.deadline) clearTimeout(job.deadline);
      const detail = runner.stderrTail.trim().split('\n').slice(-5).join('\n');
      // Not the command's fault (killed, out of memory, a crash): the step runs again once as its next
      // attempt; a second death fails the command INTERRUPTED, naming this.
      this.emit(job, {
        type: 'lost',
        reason: `the runner exited (${signal ?? `code ${code}`}) without a result${detail ? `: ${detail}` : ''}`,
        maxStarts: RUNNER_DEATH_MAX_STARTS,
      });
      job.runner = null;
    });
    return runner;
  }

  subscribe(listener: JobListener): void {
    this.listeners.push(listener);
  }

  async listJobNames(): Promise<Set<string>> {
    return new Set(this.jobs.keys());
  }

  async ensureJob(request: JobRequest): Promise<void> {
    if (this.jobs.has(request.ref.name)) return;
    const job: LocalJob = { ref: request.ref, runner: null, finished: false, deadline: null };
    this.jobs.set(request.ref.name, job);
    const log = this.opts.logger.child({ command_id: request.ref.commandId, job: request.ref.name });

    const runner = this.takeRunner();
    runner.job = job;
    runner.jobsTaken++;
    // What an earlier job made it write is not this job's business (it may be another account's).
    runner.stderrTail = '';
    job.runner = runner;
    if (runner.startError) log.error({ err: runner.startError }, 'runner could not start');
    runner.child.stdin!.write(JSON.stringify(request.spec) + '\n');

    job.deadline = setTimeout(() => {
      log.warn({ deadline_seconds: request.deadlineSeconds }, 'runner passed its deadline, stopping it');
      this.emit(job, {
        type: 'result',
        ok: false,
        errorStatus: ErrorStatus.DEADLINE_EXCEEDED,
        errorMessage:
          `the step ran longer than its deadline of ${request.deadlineSeconds} s ` +
          '(downloads, ffmpeg and uploads together) and was stopped',
        ffmpegSeconds: null,
        inputBytes: 0,
      });
      this.stopRunnerOf(job);
    }, request.deadlineSeconds * 1000);
  }

  async deleteJob(name: string): Promise<void> {
    const job = this.jobs.get(name);
    if (!job) return;
    this.jobs.delete(name);
    if (job.deadline) clearTimeout(job.deadline);
    this.stopRunnerOf(job);
  }

  /** Stops the runner still working on a job. It is never used again, and its exit reports nothing. */
  private stopRunnerOf(job: LocalJob): void {
    const runner = job.runner;
    if (runner === null) return;
    job.runner = null;
    runner.job = null;
    stopProcessGroup(runner.child);
  }

  /**
   * Stops every runner and waits until each has exited, so nothing writes into the work folder after
   * close (a runner stopped mid-job removes its working folder on the way out).
   */
  async close(): Promise<void> {
    this.closed = true;
    const children = [...this.idle.map((r) => r.child), ...[...this.jobs.values()].flatMap((j) => (j.runner ? [j.runner.child] : []))];
    const exited = children.map(waitForExit);
    // Idle runners wait on stdin: nothing of a job to stop gracefully.
    for (const runner of this.idle) {
      if (runner.child.pid === undefined) continue;
      try {
        process.kill(-runner.child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    this.idle = [];
    await Promise.all([...this.jobs.keys()].map((name) => this.deleteJob(name)));
    await Promise.all(exited);
  }

  private emit(job: LocalJob, event: RunnerEvent | BackendEvent): void {
    // After a deadline or deletion the job may still print; only its first result (or its loss) counts.
    if (job.finished || !this.jobs.has(job.ref.name)) return;
    if (event.type === 'result' || event.type === 'lost') job.finished = true;
    for (const listener of this.listeners) listener(job.ref, event);
  }
}

/** Resolves once the process has exited (at once if it already has); not its pipes, which a stray child could hold. */
function waitForExit(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function alive(runner: RunnerProcess): boolean {
  return runner.child.exitCode === null && runner.child.signalCode === null && !runner.startError;
}

/** SIGTERM lets the runner stop ffmpeg's own process group; SIGKILL follows if it lingers. */
function stopProcessGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const pid = child.pid;
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }, KILL_GRACE_MS);
  timer.unref();
  child.once('close', () => clearTimeout(timer));
}
