// Idempotency keys in the database, so that every API process (and replica) sees the same claims.
// The first request with a key claims its row with one INSERT ... ON CONFLICT (the primary key decides
// between requests arriving together); a repeat reads the row. The answer is stored by the claim's
// holder only: a claim taken over (after its lease, or after the key expired) is no longer its own.
import { randomUUID } from 'node:crypto';
import { and, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { idempotencyKeys } from '../db/schema.ts';

/** How long a key answers again (24 hours). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000;
/** How long an unanswered claim is held before another request may take it over. */
export const IDEMPOTENCY_LEASE_MS = 60_000;

export interface StoredAnswer {
  status: number;
  contentType: string | null;
  body: string;
}

export interface KeyRow {
  fingerprint: string;
  leaseUntil: Date;
  answer: StoredAnswer | null;
}

export type ClaimOutcome = { claimed: true; claim: string } | { claimed: false; row: KeyRow | null };

export interface KeyOwner {
  apiKeyId: string;
  key: string;
}

export class IdempotencyKeysRepo {
  private readonly db: Db;
  private readonly o: { ttlMs?: number; leaseMs?: number };
  constructor(db: Db, o: { ttlMs?: number; leaseMs?: number } = {}) {
    this.db = db;
    this.o = o;
  }

  get ttlMs(): number {
    return this.o.ttlMs ?? IDEMPOTENCY_KEY_TTL_MS;
  }

  /**
   * Claims the key for this request, or tells what holds it. A row is taken over (in the same
   * statement) when it has expired, or when it is the same request's claim whose lease has run out.
   * `row` is null when the row went away between the two statements (its claim was released): claim again.
   */
  async claim(owner: KeyOwner, fingerprint: string, now: Date): Promise<ClaimOutcome> {
    const claim = randomUUID();
    const t = idempotencyKeys;
    const fresh = {
      fingerprint,
      claim,
      leaseUntil: new Date(now.getTime() + (this.o.leaseMs ?? IDEMPOTENCY_LEASE_MS)),
      createdAt: now,
      responseStatus: null,
      responseContentType: null,
      responseBody: null,
    };
    const taken = await this.db
      .insert(t)
      .values({ apiKeyId: owner.apiKeyId, key: owner.key, ...fresh })
      .onConflictDoUpdate({
        target: [t.apiKeyId, t.key],
        set: fresh,
        setWhere: or(
          lt(t.createdAt, this.expiredBefore(now)),
          and(isNull(t.responseStatus), lt(t.leaseUntil, now), eq(t.fingerprint, sql`excluded.fingerprint`)),
        ),
      })
      .returning({ claim: t.claim });
    if (taken.length === 1) return { claimed: true, claim };
    return { claimed: false, row: await this.find(owner) };
  }

  async find(owner: KeyOwner): Promise<KeyRow | null> {
    const [r] = await this.db.select().from(idempotencyKeys).where(this.of(owner));
    if (!r) return null;
    const answer =
      r.responseStatus === null ? null : { status: r.responseStatus, contentType: r.responseContentType, body: r.responseBody ?? '' };
    return { fingerprint: r.fingerprint, leaseUntil: r.leaseUntil, answer };
  }

  /** Stores the claim's answer; false when the claim is no longer this request's. */
  async answer(owner: KeyOwner, claim: string, answer: StoredAnswer): Promise<boolean> {
    const rows = await this.db
      .update(idempotencyKeys)
      .set({ responseStatus: answer.status, responseContentType: answer.contentType, responseBody: answer.body })
      .where(and(this.of(owner), eq(idempotencyKeys.claim, claim), isNull(idempotencyKeys.responseStatus)))
      .returning({ claim: idempotencyKeys.claim });
    return rows.length === 1;
  }

  /** Removes an unanswered claim (its request failed), so that a repeat runs. */
  async release(owner: KeyOwner, claim: string): Promise<void> {
    await this.db
      .delete(idempotencyKeys)
      .where(and(this.of(owner), eq(idempotencyKeys.claim, claim), isNull(idempotencyKeys.responseStatus)));
  }

  /** Deletes up to `batch` keys older than the TTL at `now`; how many. */
  async pruneExpired(now: Date, batch: number): Promise<number> {
    const t = idempotencyKeys;
    const oldest = this.db
      .select({ apiKeyId: t.apiKeyId, key: t.key })
      .from(t)
      .where(lt(t.createdAt, this.expiredBefore(now)))
      .limit(batch);
    const rows = await this.db
      .delete(t)
      .where(inArray(sql`(${t.apiKeyId}, ${t.key})`, oldest))
      .returning({ key: t.key });
    return rows.length;
  }

  private expiredBefore(now: Date): Date {
    return new Date(now.getTime() - this.ttlMs);
  }

  private of(owner: KeyOwner) {
    return and(eq(idempotencyKeys.apiKeyId, owner.apiKeyId), eq(idempotencyKeys.key, owner.key));
  }
}
