// A bounded Map whose entries expire a fixed time after they were set. Expired entries are dropped a
// few at a time, oldest first, whenever one is set: no scan of the whole map, so setting costs the
// same with 10 entries or 100,000. When full, the oldest entry goes. (A Map alone cannot do this
// cheaply: V8 leaves deleted entries as holes at its front until it rehashes, and finding the oldest
// live entry walks over all of them.)

interface Entry<V> {
  key: string;
  value: V;
  expiresAt: number;
}

export class ExpiringMap<V> {
  private readonly entries = new Map<string, Entry<V>>();
  /** Entries in the order they were set (= order of expiry, as they all live ttlMs); `head` is the oldest. */
  private order: Entry<V>[] = [];
  private head = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(ttlMs: number, maxEntries: number) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The live entry's value and when it expires, or undefined. */
  entry(key: string, now: number): { value: V; expiresAt: number } | undefined {
    const entry = this.entries.get(key);
    return entry === undefined || entry.expiresAt <= now ? undefined : entry;
  }

  get(key: string, now: number): V | undefined {
    return this.entry(key, now)?.value;
  }

  /** Sets the value; its time to live starts again now. */
  set(key: string, value: V, now: number): void {
    this.dropExpired(now);
    if (!this.entries.has(key) && this.entries.size >= this.maxEntries) this.dropOldest();
    const entry = { key, value, expiresAt: now + this.ttlMs };
    // An earlier entry of this key stays in `order` until it reaches the head, where it is skipped.
    this.entries.set(key, entry);
    this.order.push(entry);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  private dropExpired(now: number): void {
    while (this.head < this.order.length && this.order[this.head].expiresAt <= now) this.forgetHead();
  }

  private dropOldest(): void {
    const size = this.entries.size;
    while (this.head < this.order.length && this.entries.size === size) this.forgetHead();
  }

  private forgetHead(): void {
    const entry = this.order[this.head++];
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    // Give the consumed front back now and then (amortised: at most once per half of the array).
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }
}
