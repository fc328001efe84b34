// Webhooks (one per account and environment) and their deliveries. Deliveries of ended commands and
// files are inserted by database triggers (migration 0005); this repo adds test deliveries, and lets
// senders claim due deliveries and record attempts. A claim pushes `next_attempt_at` past the time a
// send may take: the row stays PENDING, so a sender that dies mid-send leaves it to the next claim,
// and `next_attempt_at` doubles as the claim's token (a late sender whose claim was taken over records nothing).
import { randomUUID } from 'node:crypto';
import { and, desc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { inFlightRows } from '../db/in-flight-rows.ts';
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

  /**
   * Queues a test delivery (due at once), within the account's share: at most `limits.perMinute`
   * queued in the last minute and `limits.pending` still PENDING, all its environments together.
   * Null when no webhook is set; a refusal says when to try again.
   */
  async addTestDelivery(
    accountId: string,
    environment: string,
    limits: TestDeliveryLimits = TEST_DELIVERY_LIMITS,
  ): Promise<{ id: string } | TestDeliveryRefusal | null> {
    return this.db.transaction(async (tx) => {
      // Locking the account's webhooks makes concurrent requests of one account count one after the other.
      const hooks = rowsOf<{ environment_name: string }>(
        await tx.execute(sql`select environment_name from webhooks where account_id = ${accountId} for update`),
      );
      if (!hooks.some((h) => h.environment_name === environment)) return null;
      const [counts] = rowsOf<{ recent: number; pending: number; wait_ms: string | number | null }>(
        await tx.execute(sql`
          select count(*) filter (where created_at > now() - interval '1 minute')::int as recent,
                 count(*) filter (where status = 'PENDING')::int as pending,
                 extract(epoch from (min(created_at) filter (where created_at > now() - interval '1 minute')
                   + interval '1 minute' - now())) * 1000 as wait_ms
          from webhook_deliveries
          where account_id = ${accountId} and event_type = ${WebhookEvent.TEST}
            and (created_at > now() - interval '1 minute' or status = 'PENDING')`),
      );
      if (counts.recent >= limits.perMinute) {
        return {
          retryAfterSeconds: Math.max(1, Math.ceil(Number(counts.wait_ms) / 1000)),
          reason: `at most ${limits.perMinute} test deliveries a minute per account`,
        };
      }
      if (counts.pending >= limits.pending) {
        return {
          retryAfterSeconds: 60,
          reason: `${counts.pending} test deliveries of this account are still PENDING (at most ${limits.pending}); see GET /v1/webhook/deliveries`,
        };
      }
      const id = randomUUID();
      await tx.execute(sql`
        insert into webhook_deliveries (id, account_id, environment_name, event_type, status, next_attempt_at)
        values (${id}, ${accountId}, ${environment}, ${WebhookEvent.TEST}, ${DeliveryStatus.PENDING}, now())`);
      return { id };
    });
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
   * Claims up to `limit` due deliveries for `claimMs`, taking turns across accounts (and, within an
   * account, across its webhooks) rather than in global due order: an account with a flood of due
   * deliveries gets one per turn like any other, and its attempts already in flight (`busy`) count as
   * turns taken, so the least served account goes first. Accounts and webhooks whose whole share is
   * in flight are passed over. SKIP LOCKED: senders in other processes claim other rows instead of
   * waiting, and a row another sender just claimed is no longer due.
   */
  async claimDue(limit: number, claimMs: number, busy: Busy = NOT_BUSY): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    // Candidates in turn order; a few times `limit` so that those of busy accounts can be skipped.
    const candidates = rowsOf<{ id: string; account_id: string; environment_name: string }>(
      await this.db.execute(sql`
        with busy_accounts as (${inFlightRows(busy.accounts)}), busy_webhooks as (${inFlightRows(busy.webhooks)}),
        due as (
          select d.id, d.account_id, d.environment_name, d.next_attempt_at,
            row_number() over (partition by d.account_id, d.environment_name order by d.next_attempt_at, d.id)
              + coalesce(w.n, 0) as webhook_turn
          from webhook_deliveries d
          left join busy_webhooks w on w.key = d.account_id::text || '/' || d.environment_name
          where d.status = 'PENDING' and d.next_attempt_at <= now() ${notBusy(busy)}
        ), turns as (
          select due.*,
            row_number() over (partition by due.account_id order by webhook_turn, next_attempt_at, id) + coalesce(a.n, 0) as account_turn
          from due left join busy_accounts a on a.key = due.account_id::text
        )
        select id, account_id, environment_name from turns
        order by account_turn, next_attempt_at, id
        limit ${limit * 4}`),
    );
    const ids = takeTurns(candidates, limit, busy);
    if (ids.length === 0) return [];
    const rows = await this.db
      .update(webhookDeliveries)
      .set({ nextAttemptAt: inMs(claimMs) })
      .where(
        inArray(
          webhookDeliveries.id,
          this.db
            .select({ id: webhookDeliveries.id })
            .from(webhookDeliveries)
            .where(
              and(
                inArray(webhookDeliveries.id, ids),
                eq(webhookDeliveries.status, DeliveryStatus.PENDING),
                lte(webhookDeliveries.nextAttemptAt, sql`now()`),
              ),
            )
            .for('update', { skipLocked: true }),
        ),
      )
      .returning();
    const order = new Map(ids.map((id, i) => [id, i]));
    return (rows as ClaimedDelivery[]).sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }

  /**
   * Milliseconds until the next PENDING delivery that `busy` does not pass over is due (<= 0: due
   * now), or null when none is pending. Deliveries of busy accounts wait for a slot, not for a time.
   */
  async msUntilNextDue(busy: Busy = NOT_BUSY): Promise<number | null> {
    const result = await this.db.execute(
      sql`select extract(epoch from (min(next_attempt_at) - now())) * 1000 as ms from webhook_deliveries where status = 'PENDING' ${notBusy(busy)}`,
    );
    const ms = rowsOf<{ ms: string | number | null }>(result)[0]?.ms;
    return ms === null || ms === undefined ? null : Number(ms);
  }

  /** Deletes up to `batch` delivered or failed deliveries that finished more than `retentionMs` ago; how many. */
  async pruneFinished(retentionMs: number, batch: number): Promise<number> {
    const result = await this.db.execute(sql`
      delete from webhook_deliveries where id in (
        select id from webhook_deliveries
        where finished_at is not null and finished_at < now() - ${retentionMs}::float8 * interval '1 millisecond'
        limit ${batch})
      returning id`);
    return rowsOf(result).length;
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

export interface TestDeliveryLimits {
  perMinute: number;
  pending: number;
}

/** Test deliveries one account may queue: enough to try a receiver, too few to crowd the sender. */
export const TEST_DELIVERY_LIMITS: TestDeliveryLimits = { perMinute: 10, pending: 20 };

export interface TestDeliveryRefusal {
  retryAfterSeconds: number;
  reason: string;
}

/**
 * What a sender already has in flight, with the share each account and each webhook may hold.
 * `webhooks` keys are `webhookKey(account, environment)`.
 */
export interface Busy {
  accounts: ReadonlyMap<string, number>;
  webhooks: ReadonlyMap<string, number>;
  perAccount: number;
  perWebhook: number;
  /**
   * Free slots kept for accounts with nothing in flight: an account already sending takes a slot only
   * while more than this many are free, so several accounts flooding at once still leave room for the next.
   */
  reserved: number;
}

const NOT_BUSY: Busy = { accounts: new Map(), webhooks: new Map(), perAccount: Infinity, perWebhook: Infinity, reserved: 0 };

export const webhookKey = (accountId: string, environment: string) => `${accountId}/${environment}`;

/** The accounts and webhooks whose share is all in flight, as a condition that leaves their deliveries out. */
function notBusy(busy: Busy) {
  const accounts = [...busy.accounts].filter(([, n]) => n >= busy.perAccount).map(([id]) => sql`${id}::uuid`);
  const hooks = [...busy.webhooks].filter(([, n]) => n >= busy.perWebhook).map(([key]) => sql`${key}`);
  return sql.join(
    [
      ...(accounts.length > 0 ? [sql`and account_id not in (${sql.join(accounts, sql`, `)})`] : []),
      ...(hooks.length > 0 ? [sql`and (account_id::text || '/' || environment_name) not in (${sql.join(hooks, sql`, `)})`] : []),
    ],
    sql` `,
  );
}

/**
 * Up to `limit` (the sender's free slots) candidates, in order, none taking its account or webhook
 * past its share, and none of an account already sending taking one of the `reserved` last slots.
 */
export function takeTurns(candidates: { id: string; account_id: string; environment_name: string }[], limit: number, busy: Busy): string[] {
  const accounts = new Map(busy.accounts);
  const hooks = new Map(busy.webhooks);
  const taken: string[] = [];
  for (const c of candidates) {
    if (taken.length >= limit) break;
    const key = webhookKey(c.account_id, c.environment_name);
    const a = accounts.get(c.account_id) ?? 0;
    const w = hooks.get(key) ?? 0;
    if (a >= busy.perAccount || w >= busy.perWebhook) continue;
    if (a > 0 && limit - taken.length <= busy.reserved) continue;
    accounts.set(c.account_id, a + 1);
    hooks.set(key, w + 1);
    taken.push(c.id);
  }
  return taken;
}

function appended(attempt: WebhookAttempt) {
  return sql`${webhookDeliveries.attempts} || ${JSON.stringify([attempt])}::jsonb`;
}

function final(status: DeliveryStatus, attempt: WebhookAttempt) {
  return { status, attempts: appended(attempt), nextAttemptAt: null, finishedAt: sql`now()` };
}
