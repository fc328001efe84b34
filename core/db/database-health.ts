// Whether the database can be reached, known without waiting: /readyz answers from it at once, /v1
// refuses with 503 while it is down instead of queueing behind a dead connection, and background
// workers skip their passes until it is back. A check (`select 1` on a connection of its own,
// bounded by a timer) runs every second; any query that fails for want of the database marks it
// down at once. One warning when it goes down, one line when it is back: no log flood.
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from './unavailable.ts';

export interface HealthOptions {
  /** Resolves when the database answers; null: it cannot be unreachable (PGlite runs in this process). */
  check: (() => Promise<unknown>) | null;
  logger?: Logger;
  intervalMs?: number;
  /** A check that takes longer counts as failed. */
  timeoutMs?: number;
}

export class DatabaseHealth {
  private readonly o: HealthOptions;
  private isUp = true;
  private downSince = 0;
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  private readonly onUp = new Set<() => void>();

  constructor(o: HealthOptions) {
    this.o = o;
  }

  /** Whether the last check (or query) reached the database. */
  get up(): boolean {
    return this.isUp;
  }

  /** Checks every interval until stop(). */
  start(): void {
    if (!this.o.check || this.timer) return;
    this.timer = setInterval(() => void this.checkNow(), this.o.intervalMs ?? 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Calls `fn` each time the database is reachable again; returns a function that stops that. */
  whenUp(fn: () => void): () => void {
    this.onUp.add(fn);
    return () => void this.onUp.delete(fn);
  }

  /**
   * A query failed: when `err` says the database cannot be reached, marks it down (the checks tell
   * when it is back) and returns true; the caller then need not log it.
   */
  failed(err: unknown): boolean {
    if (!isDatabaseUnavailable(err)) return false;
    this.markDown(err);
    return true;
  }

  /** One check now (a check already under way counts). */
  async checkNow(): Promise<void> {
    if (!this.o.check || this.checking) return;
    this.checking = true;
    let timer: NodeJS.Timeout | undefined;
    const timeoutMs = this.o.timeoutMs ?? 2000;
    try {
      await Promise.race([
        this.o.check(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the database did not answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
      this.markUp();
    } catch (err) {
      this.markDown(err);
    } finally {
      clearTimeout(timer);
      this.checking = false;
    }
  }

  private markDown(err: unknown): void {
    if (!this.isUp) return;
    this.isUp = false;
    this.downSince = Date.now();
    this.o.logger?.warn({ err }, 'the database cannot be reached: /v1 answers 503 and background work waits until it is back');
  }

  private markUp(): void {
    if (this.isUp) return;
    this.isUp = true;
    this.o.logger?.info({ down_seconds: Math.round((Date.now() - this.downSince) / 1000) }, 'the database can be reached again');
    for (const fn of this.onUp) fn();
  }
}
