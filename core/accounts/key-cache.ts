// Authenticated API keys, remembered briefly so that a client polling a command does not cost a key
// lookup in the database on every request. Shared by every AccountsRepo and PlansRepo over the same
// database (the API and the admin socket's CLI in embedded mode), so revoking a key, moving an account
// to another plan or editing a plan there takes effect at once. Another process (a cluster-mode CLI,
// another API replica) is seen when the database's notification of the change arrives (watchKeyChanges),
// and in any case within the time to live.
import { hash } from 'node:crypto';
import type { Database } from '../db/database.ts';

export const KEY_CACHE_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

interface Entry<T> {
  value: T;
  keyId: string;
  accountId: string;
  expires: number;
}

export class KeyCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly ttlMs: number;
  private readonly clock: () => number;

  constructor(ttlMs: number = KEY_CACHE_TTL_MS, clock: () => number = Date.now) {
    this.ttlMs = ttlMs;
    this.clock = clock;
  }

  /** The entry for this plaintext key, if it was authenticated within the time to live. */
  get(plaintext: string): T | undefined {
    const id = digest(plaintext);
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.expires <= this.clock()) {
      this.entries.delete(id);
      return undefined;
    }
    return entry.value;
  }

  set(plaintext: string, value: T, keyId: string, accountId: string): void {
    // Bounded: when full, the oldest entry goes (Map order is insertion order).
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(digest(plaintext), { value, keyId, accountId, expires: this.clock() + this.ttlMs });
  }

  forgetKey(keyId: string): void {
    for (const [id, entry] of this.entries) if (entry.keyId === keyId) this.entries.delete(id);
  }

  forgetAccount(accountId: string): void {
    for (const [id, entry] of this.entries) if (entry.accountId === accountId) this.entries.delete(id);
  }

  /** A plan changed: every cached caller may carry it, and plan edits are rare enough to start over. */
  forgetAll(): void {
    this.entries.clear();
  }
}

const sharedByOwner = new WeakMap<object, KeyCache<unknown>>();

/** One cache per database, whichever repo (accounts, plans) authenticates or invalidates. */
export function sharedKeyCache<T>(owner: object): KeyCache<T> {
  let cache = sharedByOwner.get(owner);
  if (cache === undefined) {
    cache = new KeyCache<unknown>();
    sharedByOwner.set(owner, cache);
  }
  return cache as KeyCache<T>;
}

export const KEYS_CHANGED_CHANNEL = 'ffop_keys_changed';

/** Forgets every cached key when any process revokes a key or changes an account's plan (migration 0004). */
export function watchKeyChanges(database: Database): Promise<() => Promise<void>> {
  const cache = sharedKeyCache(database.db);
  return database.listen(
    KEYS_CHANGED_CHANNEL,
    () => cache.forgetAll(),
    () => cache.forgetAll(),
  );
}

/** Keys are held by their SHA-256, never as plaintext (one-shot: a Hash object per poll cost 3% of it). */
function digest(plaintext: string): string {
  return hash('sha256', plaintext, 'base64');
}
