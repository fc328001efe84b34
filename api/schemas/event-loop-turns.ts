// A burst of submits arrives together: each event-loop turn read many requests, and each submit parsed
// and checked its body and command line (about a millisecond) before the next request of the turn was
// looked at, so a poll that came with them waited for all of them (p99 20-37 ms on PostgreSQL while
// its own work is a fraction of a millisecond). Work that takes turns here runs one piece per turn of
// the event loop, in arrival order, and requests that arrived meanwhile are read in between.

/** A FIFO of waiters, one let through per event-loop turn. */
export class EventLoopTurns {
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  /** Resolves at a turn of its own; what the caller runs right after (synchronously) has the turn. */
  take(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // An immediate queued from an immediate runs at the next turn, after that turn's I/O.
    setImmediate(() => {
      this.scheduled = false;
      this.waiting.shift()?.();
      if (this.waiting.length > 0) this.schedule();
    });
  }
}
