// Background workers (file tasks, webhook deliveries) look for work in passes: one at a time, and
// kicks during a pass make exactly one more after it, so a burst of kicks costs two passes at most.
// While the database cannot be reached, kicks make no pass (and no log line): one pass follows as
// soon as it is back.
import type { Logger } from 'pino';
import type { DatabaseHealth } from '../db/database-health.ts';

export class SerialPasses {
  private readonly pass: () => Promise<void>;
  private readonly onError: (err: unknown) => void;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly health: Pick<DatabaseHealth, 'up' | 'failed' | 'whenUp'> | undefined;
  /** A kick came (or a pass failed) while the database was down. */
  private waitingForDatabase = false;
  private readonly stopWaitingForUp: (() => void) | undefined;

  constructor(pass: () => Promise<void>, logger: Logger, what: string, health?: Pick<DatabaseHealth, 'up' | 'failed' | 'whenUp'>) {
    this.pass = pass;
    this.health = health;
    this.onError = (err) => {
      if (health?.failed(err)) this.waitingForDatabase = true;
      else logger.error({ err }, `${what} pass failed; the next pass retries`);
    };
    this.stopWaitingForUp = health?.whenUp(() => {
      if (!this.waitingForDatabase) return;
      this.waitingForDatabase = false;
      this.kick();
    });
  }

  /** Runs a pass now, or once more after the one running. Nothing after stop(). */
  kick(): void {
    if (this.stopped) return;
    if (this.health && !this.health.up) {
      this.waitingForDatabase = true;
      return;
    }
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch(this.onError)
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Takes no more kicks and waits for the pass that runs. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopWaitingForUp?.();
    await this.running;
  }
}
