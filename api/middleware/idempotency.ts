// The Idempotency-Key header of the creating POSTs (docs/automation.md). Runs after the
// /v1 gate (a 401 or 429 is never stored) and before the route: the first request with a key claims
// it and its answer is stored; a repeat of the same request (same method, path and body bytes) from the
// same API key within 24 hours gets that answer again with Idempotent-Replayed: true, and nothing new
// is created. A repeat that arrives while the first is still running waits for its answer (polling the
// row, bounded), then 409. Requests without the header cost nothing here.
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from 'pino';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  idempotencyKeyProblem,
  isStorableStatus,
  requestFingerprint,
} from '../../core/idempotency/idempotency-key.ts';
import type { IdempotencyKeysRepo, KeyOwner, StoredAnswer } from '../../core/idempotency/idempotency-keys-repo.ts';
import { invalid } from '../schemas/validation.ts';
import type { AppEnv } from './auth.ts';

/** The POST routes that create something and so take the header. */
export const IDEMPOTENT_POSTS = [
  '/v1/run-ffmpeg-command',
  '/v1/run-chained-ffmpeg-commands',
  '/v1/files/store-file',
  '/v1/files/init-upload',
  '/v1/commands/:command_id/retry',
] as const;

export interface IdempotencyDeps {
  keys: IdempotencyKeysRepo;
  clock: () => Date;
  logger: Logger;
  /** How long a repeat waits for the first request's answer before a 409; default 30 s. */
  waitMs?: number;
}

const LOC = ['header', IDEMPOTENCY_KEY_HEADER];
/** Seconds a client told 409 (first request still running) should wait. */
const IN_PROGRESS_RETRY_AFTER = 5;

export function idempotency(d: IdempotencyDeps): MiddlewareHandler<AppEnv> {
  const waitMs = d.waitMs ?? 30_000;
  return async (c, next) => {
    if (c.req.method !== 'POST') return next();
    const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
    if (key === undefined) return next();
    const problem = idempotencyKeyProblem(key);
    if (problem) throw invalid(LOC, problem);
    let body: ArrayBuffer;
    try {
      body = await c.req.arrayBuffer();
    } catch {
      return next(); // the route reads it again and answers the failure as it always does
    }
    const fingerprint = requestFingerprint(c.req.method, c.req.path, new Uint8Array(body));
    const owner: KeyOwner = { apiKeyId: c.get('caller').keyId, key };

    const deadline = Date.now() + waitMs;
    let delayMs = 10;
    let outcome = await d.keys.claim(owner, fingerprint, d.clock());
    for (;;) {
      if (outcome.claimed) return runAndStore(c, next, owner, outcome.claim);
      const row = outcome.row;
      if (row && row.fingerprint !== fingerprint) {
        throw invalid(
          LOC,
          'Idempotency-Key was used with a different request (method, path or body) in the last 24 hours; use a new key for a new request',
        );
      }
      if (row?.answer) return replay(c, row.answer);
      if (Date.now() >= deadline) {
        return c.json(
          { detail: 'A request with this Idempotency-Key is still being processed; send it again later to get its answer' },
          409,
          { 'Retry-After': String(IN_PROGRESS_RETRY_AFTER) },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, Math.max(0, deadline - Date.now()))));
      delayMs = Math.min(delayMs * 2, 500);
      // Claim again only when it may succeed: the row went away (its request failed) or its lease ran out.
      const now = d.clock();
      const current = await d.keys.find(owner);
      outcome =
        current === null || (current.answer === null && current.leaseUntil < now && current.fingerprint === fingerprint)
          ? await d.keys.claim(owner, fingerprint, now)
          : { claimed: false, row: current };
    }
  };

  async function runAndStore(c: Context<AppEnv>, next: () => Promise<void>, owner: KeyOwner, claim: string): Promise<void> {
    try {
      await next();
    } catch (err) {
      await releaseQuietly(owner, claim);
      throw err;
    }
    const res = c.res;
    if (!isStorableStatus(res.status)) {
      // A 5xx (or 429): nothing to keep, and a repeat must be able to run.
      await releaseQuietly(owner, claim);
      return;
    }
    const answer: StoredAnswer = { status: res.status, contentType: res.headers.get('content-type'), body: await res.clone().text() };
    try {
      if (!(await d.keys.answer(owner, claim, answer))) {
        d.logger.warn({ api_key_id: owner.apiKeyId }, 'an idempotency claim was taken over before its answer was stored');
      }
    } catch (err) {
      // The client still gets its answer; a repeat within the lease waits, then runs again.
      d.logger.error({ err, api_key_id: owner.apiKeyId }, 'storing the answer of an idempotency key failed');
    }
  }

  async function releaseQuietly(owner: KeyOwner, claim: string): Promise<void> {
    try {
      await d.keys.release(owner, claim);
    } catch (err) {
      d.logger.error({ err, api_key_id: owner.apiKeyId }, 'releasing an idempotency key failed; it is free again after its lease');
    }
  }
}

function replay(c: Context, answer: StoredAnswer): Response {
  const headers: Record<string, string> = { [IDEMPOTENT_REPLAYED_HEADER]: 'true' };
  if (answer.contentType) headers['Content-Type'] = answer.contentType;
  return c.body(answer.body, answer.status as ContentfulStatusCode, headers);
}
