// At most one go per key per interval. The FfmpegCommand status follows a command's progress at this
// pace (each mirror is a write to the Kubernetes API), whatever the pace of the runner's events.
export class PerKeyThrottle {
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly last = new Map<string, number>();
  /** Keys of ended commands are dropped when the map grows past this (then it doubles): amortised O(1). */
  private pruneAt = 1000;

  constructor(intervalMs: number, now: () => number = Date.now) {
    this.intervalMs = intervalMs;
    this.now = now;
  }

  /** True when `key` may go now; its interval starts then. */
  allow(key: string): boolean {
    const at = this.now();
    const previous = this.last.get(key);
    if (previous !== undefined && at - previous < this.intervalMs) return false;
    this.last.set(key, at);
    if (this.last.size > this.pruneAt) {
      for (const [k, t] of this.last) if (at - t >= this.intervalMs) this.last.delete(k);
      this.pruneAt = Math.max(1000, 2 * this.last.size);
    }
    return true;
  }

  get size(): number {
    return this.last.size;
  }
}
