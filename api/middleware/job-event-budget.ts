// How often one Job may report (/internal/v1/job-events): a token bucket per Job. A runner sends a
// few stages, at most one progress event every 2 s and one result, so the budget is far above what a
// runner needs and far below what a flood would store. In memory: each API replica keeps its own.

export interface JobEventBudgetOptions {
  /** Requests a Job may make at once (default 20). */
  burst?: number;
  /** Requests a Job may make per second over time (default 4: progress every 2 s, log pieces up to 2 a second). */
  perSecond?: number;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  updated: number;
}

export class JobEventBudget {
  private readonly buckets = new Map<string, Bucket>();
  private readonly burst: number;
  private readonly perSecond: number;
  private readonly now: () => number;

  constructor(o: JobEventBudgetOptions = {}) {
    this.burst = o.burst ?? 20;
    this.perSecond = o.perSecond ?? 4;
    this.now = o.now ?? (() => performance.now());
  }

  /** Takes one request from the Job's budget: null when allowed, else the seconds to wait. */
  take(jobName: string): number | null {
    const now = this.now();
    const bucket = this.buckets.get(jobName) ?? { tokens: this.burst, updated: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.updated) / 1000) * this.perSecond);
    bucket.updated = now;
    // Kept in order of last use, so buckets idle long enough to be full again are dropped from the front.
    this.buckets.delete(jobName);
    this.buckets.set(jobName, bucket);
    this.forgetIdle(now);
    if (bucket.tokens < 1) return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
    bucket.tokens -= 1;
    return null;
  }

  /** Jobs tracked now (for tests). */
  get size(): number {
    return this.buckets.size;
  }

  /** A few idle buckets per call: the cost stays flat however many Jobs there were. */
  private forgetIdle(now: number): void {
    const refillMs = (this.burst / this.perSecond) * 1000;
    for (let i = 0; i < 2; i++) {
      const [name, oldest] = this.buckets.entries().next().value ?? [];
      if (name === undefined || oldest === undefined || now - oldest.updated < refillMs) return;
      this.buckets.delete(name);
    }
  }
}
