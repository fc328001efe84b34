// What a running step reports before its result (the stage it reached, ffmpeg's progress) goes to its
// command in as few statements as keep polls meaningful. Each report used to be a statement of its own
// (three stages and two progress reports for a short clip, each a write of the row, a notification and
// a read by the poll cache): about a fifth of the embedded database's time per short command.
// Reports of a job are held for up to `delayMs` and written together, newest stage and newest progress
// in one conditional UPDATE; UPLOADING goes at once, since it frees capacity for the next command
// (admission.ts). One write per job at a time, so an older report never lands last. The result drops
// what is held: its own write supersedes it.
import type { Logger } from 'pino';
import type { CommandProgress } from '../db/schema.ts';
import { ProcessingStage } from '../jobs/step-spec.ts';
import type { JobRef } from './job-backend.ts';
import type { DatabaseHealth } from '../db/database-health.ts';

export interface StepState {
  processingStage?: ProcessingStage;
  progress?: CommandProgress;
}

export interface StepStateWritesOptions {
  /** One conditional write of the step's state; true when stored (the step still runs). */
  write: (ref: JobRef, state: StepState) => Promise<boolean>;
  /** After a write that was stored. */
  stored: (ref: JobRef, state: StepState) => void;
  delayMs: number;
  logger: Logger;
  /** A write that failed for want of the database is not logged: the health logs the outage once. */
  health?: Pick<DatabaseHealth, 'failed'>;
}

interface HeldState {
  ref: JobRef;
  state: StepState;
  timer: NodeJS.Timeout | null;
  writing: Promise<void> | null;
}

export class StepStateWrites {
  private readonly held = new Map<string, HeldState>();
  private readonly o: StepStateWritesOptions;
  /** While flush() runs, nothing waits for its delay. */
  private flushing = false;

  constructor(o: StepStateWritesOptions) {
    this.o = o;
  }

  report(ref: JobRef, state: StepState): void {
    let entry = this.held.get(ref.name);
    if (entry === undefined) {
      entry = { ref, state: {}, timer: null, writing: null };
      this.held.set(ref.name, entry);
    }
    entry.state = { ...entry.state, ...state };
    if (entry.writing === null) this.schedule(entry);
  }

  /** The job's result arrived: what is held of it is not written. */
  forget(ref: JobRef): void {
    const entry = this.held.get(ref.name);
    if (entry === undefined) return;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    entry.state = {};
    if (entry.writing === null) this.held.delete(ref.name);
  }

  /** Writes everything held now, and waits until no write is in flight. */
  async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.held.size > 0) {
        for (const entry of this.held.values()) if (entry.writing === null) this.writeNow(entry);
        await Promise.all([...this.held.values()].flatMap((entry) => entry.writing ?? []));
      }
    } finally {
      this.flushing = false;
    }
  }

  private schedule(entry: HeldState): void {
    if (isEmpty(entry.state)) return void this.held.delete(entry.ref.name);
    if (entry.state.processingStage === ProcessingStage.UPLOADING || this.flushing) return this.writeNow(entry);
    entry.timer ??= setTimeout(() => this.writeNow(entry), this.o.delayMs);
  }

  private writeNow(entry: HeldState): void {
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    const state = entry.state;
    entry.state = {};
    if (isEmpty(state)) return void this.held.delete(entry.ref.name);
    entry.writing = this.o
      .write(entry.ref, state)
      .then(
        (stored) => {
          if (stored) this.o.stored(entry.ref, state);
        },
        (err: unknown) => {
          if (!this.o.health?.failed(err)) this.o.logger.warn({ err, job: entry.ref.name }, 'could not store the step state');
        },
      )
      .finally(() => {
        entry.writing = null;
        // Reports that came during the write follow it.
        this.schedule(entry);
      });
  }
}

const isEmpty = (state: StepState) => state.processingStage === undefined && state.progress === undefined;
