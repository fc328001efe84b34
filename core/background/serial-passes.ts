// Background workers (file tasks, webhook deliveries) look for work in passes: one at a time, and
// kicks during a pass make exactly one more after it, so a burst of kicks costs two passes at most.
import type { Logger } from 'pino';

export class SerialPasses {
  private readonly pass: () => Promise<void>;
  private readonly onError: (err: unknown) => void;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(pass: () => Promise<void>, logger: Logger, what: string) {
    this.pass = pass;
    this.onError = (err) => logger.error({ err }, `${what} pass failed; the next pass retries`);
  }

  /** Runs a pass now, or once more after the one running. Nothing after stop(). */
  kick(): void {
    if (this.stopped) return;
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
    await this.running;
  }
}
