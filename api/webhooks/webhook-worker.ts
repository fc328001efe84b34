// Sends webhook deliveries. The rows in webhook_deliveries are the truth: the worker claims due
// PENDING rows (several API processes may run it: a claim skips rows another holds), fixes the
// body at the first attempt, signs and POSTs it, and records the attempt: DELIVERED on a 2xx, else
// a retry after the schedule's next delay, or FAILED past its end. It wakes on the database's
// notification of a new delivery, when the next retry is due, and every few seconds as a safety net.
// Fair shares: each account, and each webhook, may hold only a few of the attempts in flight, and
// claims take turns across accounts, so a receiver that never answers delays only its own account.
// Finished deliveries are deleted once their retention has passed.
import { SerialPasses } from '../../core/background/serial-passes.ts';
import type { Logger } from 'pino';
import type { CommandsRepo } from '../../core/commands/commands-repo.ts';
import type { Database } from '../../core/db/database.ts';
import type { WebhookAttempt } from '../../core/db/schema.ts';
import type { FilesRepo } from '../../core/files/files-repo.ts';
import { createAddressPolicy, type AddressPolicy } from '../../core/net/address-policy.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { postWebhook, type PostOutcome } from '../../core/webhooks/post-webhook.ts';
import { DEFAULT_RETRY_DELAYS_MS, nextRetryDelayMs } from '../../core/webhooks/retry-schedule.ts';
import { signedHeaders } from '../../core/webhooks/signature.ts';
import {
  WEBHOOK_REMOVED,
  WebhooksRepo,
  webhookKey,
  type AttemptResult,
  type Busy,
  type ClaimedDelivery,
} from '../../core/webhooks/webhooks-repo.ts';
import { buildPayload } from './payload.ts';

export const WEBHOOK_DELIVERY_CHANNEL = 'ffop_webhook_delivery';

/** What an attempt came to, for metrics: delivered, failed but retried later, or failed for good. */
export type AttemptOutcome = 'delivered' | 'failed_attempt' | 'gave_up';

export interface WebhookWorkerOptions {
  database: Database;
  commands: CommandsRepo;
  files: FilesRepo;
  storage: Storage;
  logger: Logger;
  /** FFOP_WEBHOOK_ALLOW_ADDRESSES: the exceptions to the SSRF guard for webhook URLs (not the downloads' list). */
  allowAddresses: string[];
  /** Delays between attempts; default DEFAULT_RETRY_DELAYS_MS (about a day in all). */
  retryDelaysMs?: readonly number[];
  /** Deadline of one attempt; default 15 s. */
  timeoutMs?: number;
  /** Longest wait for the connection, within the attempt's deadline; default 3 s. */
  connectTimeoutMs?: number;
  /** A claim lasts the attempt's deadline plus this; a sender that died is replaced after it. Default 30 s. */
  claimMarginMs?: number;
  /** Safety-net poll; default 5 s. */
  pollMs?: number;
  /** Attempts in flight at once, all accounts together; default 16. */
  maxParallel?: number;
  /** Attempts in flight at once for one account; default 4. */
  perAccount?: number;
  /** Attempts in flight at once for one webhook (account and environment); default 2. */
  perWebhook?: number;
  /** Slots kept free for accounts with no attempt in flight; default a quarter of `maxParallel`. */
  reserved?: number;
  /** FFOP_WEBHOOK_RETENTION_SECONDS: delivered and failed deliveries are deleted this long after they ended; default 30 days. */
  retentionMs?: number;
  /** Time between two prunes; default 10 minutes. */
  pruneEveryMs?: number;
  /** Other rows past their time, deleted with each prune (every API process runs this worker, in both modes). */
  alsoPrune?: readonly ExpiredRows[];
  /** Called after every attempt (metrics). */
  onAttempt?: (outcome: AttemptOutcome, durationMs: number) => void;
  clock?: () => Date;
}

/** Rows of another table past their time: `prune` deletes up to `batch` of them and tells how many. */
export interface ExpiredRows {
  what: string;
  prune: (batch: number) => Promise<number>;
}

export class WebhookWorker {
  private readonly o: WebhookWorkerOptions;
  private readonly repo: WebhooksRepo;
  private readonly policy: AddressPolicy;
  private readonly clock: () => Date;
  private readonly timeoutMs: number;
  private readonly maxParallel: number;
  private readonly pollMs: number;
  private readonly abort = new AbortController();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Attempts in flight per account and per webhook (webhookKey). */
  private readonly busyAccounts = new Map<string, number>();
  private readonly busyWebhooks = new Map<string, number>();
  private lastPrune = 0;
  private readonly passes: SerialPasses;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(o: WebhookWorkerOptions) {
    this.o = o;
    this.repo = new WebhooksRepo(o.database.db);
    this.policy = createAddressPolicy(o.allowAddresses);
    this.clock = o.clock ?? (() => new Date());
    this.timeoutMs = o.timeoutMs ?? 15_000;
    this.maxParallel = o.maxParallel ?? 16;
    this.pollMs = o.pollMs ?? 5_000;
    this.passes = new SerialPasses(() => this.pass(), o.logger, 'webhook', { health: o.database.health });
  }

  async start(): Promise<void> {
    this.unlisten = await this.o.database.listen(
      WEBHOOK_DELIVERY_CHANNEL,
      () => this.kick(),
      () => this.kick(),
    );
    this.kick();
  }

  /** Looks for due deliveries now. */
  kick(): void {
    this.passes.kick();
  }

  /** Stops claiming, cuts attempts in flight short (their deliveries are due again at once) and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort(new Error('the webhook worker is stopping'));
    if (this.timer) clearTimeout(this.timer);
    await this.unlisten?.();
    await this.passes.stop();
    await Promise.all(this.inFlight.values());
  }

  private async pass(): Promise<void> {
    await this.pruneNowAndThen();
    const free = this.maxParallel - this.inFlight.size;
    if (free > 0) {
      const claimMs = this.timeoutMs + (this.o.claimMarginMs ?? 30_000);
      for (const d of await this.repo.claimDue(free, claimMs, this.busy(free))) {
        if (this.stopped) {
          await this.repo.release(d);
          continue;
        }
        const key = webhookKey(d.accountId, d.environmentName);
        count(this.busyAccounts, d.accountId, +1);
        count(this.busyWebhooks, key, +1);
        const task = this.deliver(d)
          .catch((err) => {
            // An outage is logged once by the database's health; the claim ends and the delivery is sent again.
            if (!this.o.database.health.failed(err))
              this.o.logger.error({ err, delivery_id: d.id }, 'webhook delivery failed; it is retried when its claim ends');
          })
          .finally(() => {
            this.inFlight.delete(d.id);
            count(this.busyAccounts, d.accountId, -1);
            count(this.busyWebhooks, key, -1);
            this.kick();
          });
        this.inFlight.set(d.id, task);
      }
    }
    await this.wakeForNextDue();
  }

  /** The shares, with `free` slots left: once only the reserved ones are, an account already sending is full. */
  private busy(free: number): Busy {
    const reserved = this.o.reserved ?? Math.floor(this.maxParallel / 4);
    return {
      accounts: this.busyAccounts,
      webhooks: this.busyWebhooks,
      perAccount: free <= reserved ? 1 : (this.o.perAccount ?? 4),
      perWebhook: this.o.perWebhook ?? 2,
      reserved,
    };
  }

  /** Deletes deliveries past their retention, at most once every `pruneEveryMs`, a batch at a time. */
  private async pruneNowAndThen(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPrune < (this.o.pruneEveryMs ?? 600_000)) return;
    this.lastPrune = now;
    const retentionMs = this.o.retentionMs ?? 30 * 86_400_000;
    let pruned = 0;
    for (let n = -1; n !== 0 && !this.stopped; pruned += n) n = await this.repo.pruneFinished(retentionMs, 1000);
    if (pruned > 0) this.o.logger.info({ pruned }, 'webhook deliveries past their retention deleted');
    for (const rows of this.o.alsoPrune ?? []) {
      let deleted = 0;
      for (let n = -1; n !== 0 && !this.stopped; deleted += n) n = await rows.prune(1000);
      if (deleted > 0) this.o.logger.info({ pruned: deleted }, `${rows.what} deleted`);
    }
  }

  /** Sleeps until the next delivery is due, or the poll interval, whichever comes first. */
  private async wakeForNextDue(): Promise<void> {
    // A delivery whose account or webhook has its share in flight waits for a slot: the end of an attempt kicks.
    const dueInMs =
      this.inFlight.size >= this.maxParallel ? null : await this.repo.msUntilNextDue(this.busy(this.maxParallel - this.inFlight.size));
    if (this.stopped) return;
    // Not below 20 ms: a due row that another sender holds locked right now must not make this spin.
    const delay = dueInMs === null ? this.pollMs : Math.min(this.pollMs, Math.max(20, dueInMs));
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), delay);
    this.timer.unref();
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const log = this.o.logger.child({ delivery_id: d.id, event_type: d.eventType, subject_id: d.subjectId });
    const webhook = await this.repo.find(d.accountId, d.environmentName);
    if (!webhook) return this.giveUp(d, WEBHOOK_REMOVED, log);
    let payload = d.payload;
    if (payload === null) {
      payload = await buildPayload(d, this.o, this.clock());
      if (payload === null) return this.giveUp(d, `the ${d.eventType.split('.')[0]} ${d.subjectId} no longer exists`, log);
      if (!(await this.repo.storePayload(d, payload))) return; // the claim was taken over
    }
    const started = this.clock();
    let outcome: PostOutcome;
    try {
      const headers = signedHeaders(webhook.secret, `msg_${d.id}`, started, payload);
      outcome = await postWebhook(webhook.url, payload, headers, {
        policy: this.policy,
        timeoutMs: this.timeoutMs,
        connectTimeoutMs: this.o.connectTimeoutMs ?? 3_000,
        signal: this.abort.signal,
      });
    } catch (err) {
      if (!this.stopped) throw err;
      await this.repo.release(d); // stopping: the next start (or another process) sends it again
      return;
    }
    const durationMs = this.clock().getTime() - started.getTime();
    const attempt: WebhookAttempt = { at: started.toISOString(), statusCode: outcome.statusCode, error: outcome.error, durationMs };
    const delivered = outcome.error === null;
    const retryInMs = delivered ? null : nextRetryDelayMs(d.attempts.length + 1, this.o.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS);
    const result: AttemptResult = delivered
      ? { status: 'DELIVERED' }
      : retryInMs === null
        ? { status: 'FAILED' }
        : { status: 'PENDING', retryInMs };
    if (!(await this.repo.recordAttempt(d, attempt, result))) return;
    const kind: AttemptOutcome = delivered ? 'delivered' : result.status === 'FAILED' ? 'gave_up' : 'failed_attempt';
    this.o.onAttempt?.(kind, durationMs);
    if (kind === 'delivered') log.debug({ status_code: outcome.statusCode, duration_ms: durationMs }, 'webhook delivered');
    else log.warn({ status_code: outcome.statusCode, error: outcome.error, retry_in_ms: retryInMs }, 'webhook attempt failed');
  }

  /** Ends a delivery that cannot be sent (no webhook, nothing to announce) with that reason as its last attempt. */
  private async giveUp(d: ClaimedDelivery, reason: string, log: Logger): Promise<void> {
    const attempt: WebhookAttempt = { at: this.clock().toISOString(), statusCode: null, error: reason, durationMs: 0 };
    if (await this.repo.recordAttempt(d, attempt, { status: 'FAILED' })) {
      this.o.onAttempt?.('gave_up', 0);
      log.warn({ error: reason }, 'webhook delivery ended without an attempt');
    }
  }
}

function count(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/** A worker already listening and looking for due deliveries; `stop()` it with the service. */
export async function startWebhookWorker(o: WebhookWorkerOptions): Promise<WebhookWorker> {
  const worker = new WebhookWorker(o);
  await worker.start();
  return worker;
}
