// Webhooks (one per account and environment) and their deliveries. Deliveries of ended commands and
// files are inserted by database triggers (migration 0005); this repo adds test deliveries, and lets
// senders claim due deliveries and record attempts. A claim pushes `next_attempt_at` past the time a
// send may take: the row stays PENDING, so a sender that dies mid-send leaves it to the next claim,
// and `next_attempt_at` doubles as the claim's token (a late sender whose claim was taken over records nothing).
import { randomUUID } from 'node:crypto';
import { and, asc, desc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { rowsOf } from '../db/migrate.ts';
import { webhookDeliveries, webhooks, type WebhookAttempt } from '../db/schema.ts';
import { newWebhookSecret } from './signature.ts';
import { DeliveryStatus, WebhookEvent } from './webhook-status.ts';

export type WebhookRow = typeof webhooks.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
/** A claimed delivery: `nextAttemptAt` is the end of the claim, and its token. */
export type ClaimedDelivery = DeliveryRow & { nextAttemptAt: Date };

/** What happens to a delivery after an attempt. */
export type AttemptResult = { status: 'DELIVERED' } | { status: 'FAILED' } | { status: 'PENDING'; retryInMs: number };

export const WEBHOOK_REMOVED = 'webhook removed';

/** now() plus a number of milliseconds, in the database's clock (the one every claim compares with). */
const inMs = (ms: number) => sql`now() + ${ms}::float8 * interval '1 millisecond'`;

export class WebhooksRepo {
  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  private static of(accountId: string, environment: string) {
    return and(eq(webhooks.accountId, accountId), eq(webhooks.environmentName, environment));
  }

  async find(accountId: string, environment: string): Promise<WebhookRow | null> {
    const [row] = await this.db.select().from(webhooks).where(WebhooksRepo.of(accountId, environment));
    return row ?? null;
  }

  /**
   * Sets the URL of the environment's webhook. A new webhook, or `rotateSecret`, gets a new secret,
   * returned as `newSecret` (shown once); otherwise the secret stays and `newSecret` is null.
   */
  async set(accountId: string, environment: string, url: string, rotateSecret: boolean, now: Date) {
    const candidate = newWebhookSecret();
    const [row] = await this.db
      .insert(webhooks)
      .values({ accountId, environmentName: environment, url, secret: candidate, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: [webhooks.accountId, webhooks.environmentName],
        set: { url, updatedAt: now, ...(rotateSecret ? { secret: candidate } : {}) },
      })
      .returning();
    // The random candidate was written only when the row is new or its secret rotated.
    return { row, newSecret: row.secret === candidate ? candidate : null };
  }

  /** Removes the webhook; its PENDING deliveries end FAILED with "webhook removed". False when none was set. */
  async delete(accountId: string, environment: string, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const removed = await tx.delete(webhooks).where(WebhooksRepo.of(accountId, environment)).returning({ url: webhooks.url });
      if (removed.length === 0) return false;
      const attempt: WebhookAttempt = { at: now.toISOString(), statusCode: null, error: WEBHOOK_REMOVED, durationMs: 0 };
      await tx
        .update(webhookDeliveries)
        .set(final(DeliveryStatus.FAILED, attempt))
        .where(
          and(
            eq(webhookDeliveries.accountId, accountId),
            eq(webhookDeliveries.environmentName, environment),
            eq(webhookDeliveries.status, DeliveryStatus.PENDING),
          ),
        );
      return true;
    });
  }

  /** Queues a test delivery (due at once); its id, or null when no webhook is set. */
  async addTestDelivery(accountId: string, environment: string): Promise<string | null> {
    const id = randomUUID();
    // One statement: the delivery exists only if the webhook does.
    const inserted = await this.db.execute(sql`
      insert into webhook_deliveries (id, account_id, environment_name, event_type, status, next_attempt_at)
      select ${id}, account_id, environment_name, ${WebhookEvent.TEST}, ${DeliveryStatus.PENDING}, now()
      from webhooks where account_id = ${accountId} and environment_name = ${environment}
      returning id`);
    return rowsOf<{ id: string }>(inserted).length === 1 ? id : null;
  }

  /** The environment's deliveries, newest first. */
  async listDeliveries(accountId: string, environment: string, limit: number, offset: number): Promise<DeliveryRow[]> {
    return this.db
      .select()
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.accountId, accountId), eq(webhookDeliveries.environmentName, environment)))
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
      .limit(limit)
      .offset(offset);
  }

  async findDelivery(id: string): Promise<DeliveryRow | null> {
    const [row] = await this.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
    return row ?? null;
  }

  /**
   * Claims up to `limit` due deliveries for `claimMs`. SKIP LOCKED: senders in other processes claim
   * other rows instead of waiting, and a row another sender just claimed is no longer due.
   */
  async claimDue(limit: number, claimMs: number): Promise<ClaimedDelivery[]> {
    const due = this.db
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.status, DeliveryStatus.PENDING), lte(webhookDeliveries.nextAttemptAt, sql`now()`)))
      .orderBy(asc(webhookDeliveries.nextAttemptAt))
      .limit(limit)
      .for('update', { skipLocked: true });
    const rows = await this.db
      .update(webhookDeliveries)
      .set({ nextAttemptAt: inMs(claimMs) })
      .where(inArray(webhookDeliveries.id, due))
      .returning();
    return rows as ClaimedDelivery[];
  }

  /** Milliseconds until the next PENDING delivery is due (<= 0: due now), or null when none is pending. */
  async msUntilNextDue(): Promise<number | null> {
    const result = await this.db.execute(
      sql`select extract(epoch from (min(next_attempt_at) - now())) * 1000 as ms from webhook_deliveries where status = 'PENDING'`,
    );
    const ms = rowsOf<{ ms: string | number | null }>(result)[0]?.ms;
    return ms === null || ms === undefined ? null : Number(ms);
  }

  private claimed(d: ClaimedDelivery) {
    return and(
      eq(webhookDeliveries.id, d.id),
      eq(webhookDeliveries.status, DeliveryStatus.PENDING),
      eq(webhookDeliveries.nextAttemptAt, d.nextAttemptAt),
    );
  }

  /** Fixes the body at the first attempt; false when the claim was lost or a body was already fixed. */
  async storePayload(d: ClaimedDelivery, payload: string): Promise<boolean> {
    const rows = await this.db
      .update(webhookDeliveries)
      .set({ payload })
      .where(and(this.claimed(d), isNull(webhookDeliveries.payload)))
      .returning({ id: webhookDeliveries.id });
    return rows.length === 1;
  }

  /** Appends the attempt and moves the delivery on; false when the claim was lost (nothing is written). */
  async recordAttempt(d: ClaimedDelivery, attempt: WebhookAttempt, result: AttemptResult): Promise<boolean> {
    const set =
      result.status === 'PENDING'
        ? { attempts: appended(attempt), nextAttemptAt: inMs(result.retryInMs) }
        : final(result.status === 'DELIVERED' ? DeliveryStatus.DELIVERED : DeliveryStatus.FAILED, attempt);
    const rows = await this.db.update(webhookDeliveries).set(set).where(this.claimed(d)).returning({ id: webhookDeliveries.id });
    return rows.length === 1;
  }

  /** Gives a claimed delivery back, due at once (its sender is stopping). */
  async release(d: ClaimedDelivery): Promise<void> {
    await this.db
      .update(webhookDeliveries)
      .set({ nextAttemptAt: sql`now()` })
      .where(this.claimed(d));
  }
}

function appended(attempt: WebhookAttempt) {
  return sql`${webhookDeliveries.attempts} || ${JSON.stringify([attempt])}::jsonb`;
}

function final(status: DeliveryStatus, attempt: WebhookAttempt) {
  return { status, attempts: appended(attempt), nextAttemptAt: null, finishedAt: sql`now()` };
}
