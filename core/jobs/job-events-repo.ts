import { asc, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { jobEvents } from '../db/schema.ts';
import type { RunnerEvent } from './step-spec.ts';

export interface StoredJobEvent {
  id: number;
  jobName: string;
  event: RunnerEvent;
}

/** Notified on every stored event (migration 0004). */
export const JOB_EVENT_CHANNEL = 'ffop_job_event';

export class JobEventsRepo {
  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  async append(jobName: string, event: RunnerEvent): Promise<void> {
    await this.db.insert(jobEvents).values({ jobName, event: event });
  }

  /**
   * Stores a Job's result unless it has one already (migration 0010: one result per Job, so a replay
   * cannot slip in beside the first even at the same moment). False when it had one.
   */
  async appendResult(jobName: string, event: Extract<RunnerEvent, { type: 'result' }>): Promise<boolean> {
    const rows = await this.db.insert(jobEvents).values({ jobName, event }).onConflictDoNothing().returning({ id: jobEvents.id });
    return rows.length > 0;
  }

  /** Seconds since the Job's first stored event (null: none yet), and whether its result is stored. */
  async reportState(jobName: string): Promise<{ firstEventAgeSeconds: number | null; hasResult: boolean }> {
    const [row] = await this.db
      .select({
        age: sql<string | null>`extract(epoch from now() - min(${jobEvents.createdAt}))`,
        hasResult: sql<boolean | null>`bool_or(${jobEvents.event}->>'type' = 'result')`,
      })
      .from(jobEvents)
      .where(eq(jobEvents.jobName, jobName));
    return { firstEventAgeSeconds: row?.age == null ? null : Number(row.age), hasResult: row?.hasResult === true };
  }

  async after(id: number, limit = 500): Promise<StoredJobEvent[]> {
    const rows = await this.db.select().from(jobEvents).where(gt(jobEvents.id, id)).orderBy(asc(jobEvents.id)).limit(limit);
    return rows.map((r) => ({ id: r.id, jobName: r.jobName, event: r.event as unknown as RunnerEvent }));
  }

  async forJob(jobName: string): Promise<StoredJobEvent[]> {
    const rows = await this.db.select().from(jobEvents).where(eq(jobEvents.jobName, jobName)).orderBy(asc(jobEvents.id));
    return rows.map((r) => ({ id: r.id, jobName: r.jobName, event: r.event as unknown as RunnerEvent }));
  }

  /**
   * Kueue mode, a Job suspended again: its pod's stages and progress go, so the next pod's first report
   * starts the token's lifetime again (see api/routes/job-events.ts). A result stays.
   */
  async forgetReports(jobName: string): Promise<void> {
    await this.db.delete(jobEvents).where(sql`${jobEvents.jobName} = ${jobName} and ${jobEvents.event}->>'type' <> 'result'`);
  }

  async deleteForJobs(jobNames: string[]): Promise<void> {
    if (jobNames.length) await this.db.delete(jobEvents).where(inArray(jobEvents.jobName, jobNames));
  }
}
