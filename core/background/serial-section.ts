// Work that must not interleave (the reconciler's passes, and the runner events that change the same
// commands) runs one piece at a time, in the order it came. A piece's failure is its caller's to
// handle: the pieces after it run anyway.
export class SerialSection {
  private tail: Promise<void> = Promise.resolve();

  /** Runs `work` after every piece queued before it; settles with `work`'s outcome. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Resolves once every piece queued so far has run. */
  idle(): Promise<void> {
    return this.tail;
  }
}
