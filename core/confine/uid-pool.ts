// When the service runs as root, every confined run gets a uid of its own from this range, so two
// commands running at once (of one account or of two) cannot touch each other's files or processes
// even if a namespace were missing. The uids have no passwd entry, home or group membership.

export const DEFAULT_UID_BASE = 2_000_000;
export const DEFAULT_UID_COUNT = 10_000;

export class UidPool {
  readonly base: number;
  readonly count: number;
  private readonly inUse = new Set<number>();
  private next = 0;

  constructor(base: number = DEFAULT_UID_BASE, count: number = DEFAULT_UID_COUNT) {
    this.base = base;
    this.count = count;
    if (!Number.isSafeInteger(base) || base < 1000 || !Number.isSafeInteger(count) || count < 1 || base + count > 2 ** 32 - 2) {
      throw new Error(`invalid sandbox uid range ${base}+${count}`);
    }
  }

  /** A uid no other run of this process holds; round robin, so a uid is not reused at once. */
  acquire(): number {
    for (let tried = 0; tried < this.count; tried++) {
      const uid = this.base + ((this.next + tried) % this.count);
      if (!this.inUse.has(uid)) {
        this.inUse.add(uid);
        this.next = (uid - this.base + 1) % this.count;
        return uid;
      }
    }
    throw new Error(`all ${this.count} sandbox uids are in use`);
  }

  release(uid: number): void {
    this.inUse.delete(uid);
  }

  /** True when `uid` lies in this pool's range (a runner checks the uid it was handed). */
  contains(uid: number): boolean {
    return Number.isSafeInteger(uid) && uid >= this.base && uid < this.base + this.count;
  }
}
