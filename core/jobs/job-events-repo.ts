import { asc, eq, gt, inArray } from 'drizzle-orm';
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

  async after(id: number, limit = 500): Promise<StoredJobEvent[]> {
    const rows = await this.db.select().from(jobEvents).where(gt(jobEvents.id, id)).orderBy(asc(jobEvents.id)).limit(limit);
    return rows.map((r) => ({ id: r.id, jobName: r.jobName, event: r.event as unknown as RunnerEvent }));
  }

  async forJob(jobName: string): Promise<StoredJobEvent[]> {
    const rows = await this.db.select().from(jobEvents).where(eq(jobEvents.jobName, jobName)).orderBy(asc(jobEvents.id));
    return rows.map((r) => ({ id: r.id, jobName: r.jobName, event: r.event as unknown as RunnerEvent }));
  }

  async deleteForJobs(jobNames: string[]): Promise<void> {
    if (jobNames.length) await this.db.delete(jobEvents).where(inArray(jobEvents.jobName, jobNames));
  }
}
