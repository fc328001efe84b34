// Background workers (file tasks, webhook deliveries) look for work in passes: one at a time, and
// kicks during a pass make exactly one more after it, so a burst of kicks costs two passes at most.
// While the database cannot be reached, kicks make no pass (and no log line): one pass follows as
// soon as it is back.
//
// Passes may share a SerialSection with other work (the reconciler's runner events): a pass then
// waits for its turn, and kicks while it waits are merged into it, since it has not read anything yet.
import type { Logger } from 'pino';
import type { DatabaseHealth } from '../db/database-health.ts';
import type { SerialSection } from './serial-section.ts';

export interface SerialPassesOptions {
  /** While the database cannot be reached, kicks wait for it. */
  health?: Pick<DatabaseHealth, 'up' | 'failed' | 'whenUp'>;
  /** Passes run in this section, between the other work queued there. */
  section?: SerialSection;
}

export class SerialPasses {
  private readonly pass: () => Promise<void>;
  private readonly onError: (err: unknown) => void;
  private running: Promise<void> | null = null;
  /** The running pass waits for its turn in the section: it has not begun reading. */
  private waitingForTurn = false;
  private again = false;
  private stopped = false;
  private readonly health: Pick<DatabaseHealth, 'up' | 'failed' | 'whenUp'> | undefined;
  /** A kick came (or a pass failed) while the database was down. */
  private waitingForDatabase = false;
  private readonly stopWaitingForUp: (() => void) | undefined;
  private readonly section: SerialSection | undefined;

  constructor(pass: () => Promise<void>, logger: Logger, what: string, o: SerialPassesOptions = {}) {
    const health = o.health;
    this.pass = pass;
    this.health = health;
    this.section = o.section;
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
      if (!this.waitingForTurn) this.again = true;
      return;
    }
    const pass = (): Promise<void> => {
      this.waitingForTurn = false;
      return this.pass();
    };
    this.waitingForTurn = true;
    this.running = (this.section ? this.section.run(pass) : pass()).catch(this.onError).finally(() => {
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
