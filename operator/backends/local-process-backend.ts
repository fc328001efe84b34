// Embedded mode's job backend: each job is a runner child process that gets its StepSpec on stdin
// and reports RunnerEvents as JSON lines on stdout. Finished jobs are kept (like Kubernetes Jobs)
// until the reconciler deletes them, so a result is never mistaken for a lost job.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { RunnerEvent } from '../../core/jobs/step-spec.ts';
import { ErrorStatus } from '../../core/commands/error-status.ts';
import type { JobBackend, JobListener, JobRef, JobRequest } from './job-backend.ts';
import type { UidPool } from '../../core/confine/uid-pool.ts';

// Compiled (dist/), the runner is compiled too and starts with plain node; from the sources (tests,
// development) it runs through tsx like this module.
const COMPILED = import.meta.url.endsWith('.js');
const RUNNER_MAIN = fileURLToPath(new URL(`../../runner-image/main.${COMPILED ? 'js' : 'ts'}`, import.meta.url));
const RUNNER_ARGS = COMPILED ? [RUNNER_MAIN] : ['--import', import.meta.resolve('tsx'), RUNNER_MAIN];
const STDERR_TAIL = 4096;
const KILL_GRACE_MS = 5000;

interface RunnerProcess {
  child: ChildProcess;
  stderrTail: () => string;
  startError: Error | null;
}

interface LocalJob {
  ref: JobRef;
  child: ChildProcess | null;
  finished: boolean;
  deadline: NodeJS.Timeout | null;
}

export interface LocalProcessBackendOptions {
  logger: Logger;
  /** Folder under which each runner makes its working folders. */
  workRoot: string;
  /** Defaults to the machine's cores. */
  capacityVcpus?: number;
  /** Extra environment for runners (e.g. FFMPEG_PATH, the confinement settings). */
  env?: Record<string, string>;
  /** As root: each runner's ffmpeg gets a uid of its own from here (FFOP_SANDBOX_UID), held until the runner is gone. */
  uids?: UidPool;
  /**
   * Keep one runner started ahead, waiting for its spec: a job then skips the runner's start (node and
   * its modules, about 0.1 s of CPU). The spare holds a uid while it waits.
   */
  warmRunner?: boolean;
}

export class LocalProcessBackend implements JobBackend {
  readonly capacityVcpus: number;
  private readonly jobs = new Map<string, LocalJob>();
  private readonly listeners: JobListener[] = [];
  private readonly opts: LocalProcessBackendOptions;

  /** A runner started ahead, its modules loaded, waiting on stdin for the next job's spec. */
  private warm: RunnerProcess | null = null;
  private closed = false;

  constructor(opts: LocalProcessBackendOptions) {
    this.opts = opts;
    this.capacityVcpus = opts.capacityVcpus ?? availableParallelism();
    if (opts.warmRunner) this.warm = this.startRunner();
  }

  /** The warm runner if it is still alive (and a new one started behind it), else a new runner. */
  private takeRunner(): RunnerProcess {
    const warm = this.warm;
    this.warm = null;
    const alive = warm !== null && warm.child.exitCode === null && warm.child.signalCode === null && !warm.startError;
    if (warm && !alive) stopProcessGroup(warm.child);
    const runner = alive ? warm : this.startRunner();
    if (this.opts.warmRunner) {
      // Off the job's critical path: the next runner loads while this one works.
      setImmediate(() => {
        if (!this.closed && this.warm === null) this.warm = this.startRunner();
      });
    }
    return runner;
  }

  private startRunner(): RunnerProcess {
    const uid = this.opts.uids?.acquire();
    const child = spawn(process.execPath, RUNNER_ARGS, {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // own process group, so a deadline can stop the runner and nothing else
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        FFOP_WORK_ROOT: this.opts.workRoot,
        ...this.opts.env,
        ...(uid === undefined ? {} : { FFOP_SANDBOX_UID: String(uid) }),
      },
    });
    const runner: RunnerProcess = { child, stderrTail: () => stderrTail, startError: null };
    if (uid !== undefined) child.once('close', () => this.opts.uids?.release(uid));
    child.once('error', (err) => (runner.startError = err));
    child.stdin!.on('error', () => {}); // a runner that dies early closes its stdin; the exit handler reports it
    let stderrTail = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
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
    const job: LocalJob = { ref: request.ref, child: null, finished: false, deadline: null };
    this.jobs.set(request.ref.name, job);
    const log = this.opts.logger.child({ command_id: request.ref.commandId, job: request.ref.name });

    const runner = this.takeRunner();
    const child = runner.child;
    job.child = child;
    child.stdin!.end(JSON.stringify(request.spec));

    let gotResult = false;
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      let event: RunnerEvent;
      try {
        event = JSON.parse(line) as RunnerEvent;
      } catch {
        log.warn({ line: line.slice(0, 200) }, 'runner printed a line that is not an event');
        return;
      }
      if (event.type === 'result') gotResult = true;
      this.emit(job, event);
    });

    job.deadline = setTimeout(() => {
      log.warn({ deadline_seconds: request.deadlineSeconds }, 'runner passed its deadline, stopping it');
      this.emit(job, {
        type: 'result',
        ok: false,
        errorStatus: ErrorStatus.DEADLINE_EXCEEDED,
        errorMessage: `the step ran longer than its deadline of ${request.deadlineSeconds} s (downloads, ffmpeg and uploads together) and was stopped`,
        ffmpegSeconds: null,
        inputBytes: 0,
      });
      gotResult = true;
      stopProcessGroup(child);
    }, request.deadlineSeconds * 1000);

    if (runner.startError) log.error({ err: runner.startError }, 'runner could not start');
    child.on('error', (err) => log.error({ err }, 'runner could not start'));
    child.on('close', (code, signal) => {
      if (job.deadline) clearTimeout(job.deadline);
      if (!gotResult) {
        const detail = runner.stderrTail().trim().split('\n').slice(-5).join('\n');
        this.emit(job, {
          type: 'result',
          ok: false,
          errorStatus: ErrorStatus.INTERNAL_ERROR,
          errorMessage: `the runner exited (${signal ?? `code ${code}`}) without a result${detail ? `: ${detail}` : ''}`,
          ffmpegSeconds: null,
          inputBytes: 0,
        });
      }
      job.finished = true;
      job.child = null;
    });
  }

  async deleteJob(name: string): Promise<void> {
    const job = this.jobs.get(name);
    if (!job) return;
    this.jobs.delete(name);
    if (job.deadline) clearTimeout(job.deadline);
    if (job.child) stopProcessGroup(job.child);
  }

  async close(): Promise<void> {
    this.closed = true;
    // The spare is idle (waiting on stdin): nothing of a job to stop gracefully.
    if (this.warm?.child.pid !== undefined) {
      try {
        process.kill(-this.warm.child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    this.warm = null;
    await Promise.all([...this.jobs.keys()].map((name) => this.deleteJob(name)));
  }

  private emit(job: LocalJob, event: RunnerEvent): void {
    // After a deadline or deletion the job may still print; only its first result counts.
    if (job.finished || !this.jobs.has(job.ref.name)) return;
    if (event.type === 'result') job.finished = true;
    for (const listener of this.listeners) listener(job.ref, event);
  }
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
