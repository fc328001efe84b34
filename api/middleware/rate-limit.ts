// Per-key rate limit (token bucket, requests per minute by plan). In memory: with several API
// replicas each enforces its own share.
import type { Context } from 'hono';
import type { Caller } from '../../core/accounts/accounts-repo.ts';

interface Bucket {
  tokens: number;
  updated: number;
}

export class RateLimit {
  private readonly buckets = new Map<string, Bucket>();

  /** Takes a token from the caller's key; 429 with Retry-After when none is left, null otherwise. */
  refusal(c: Context, caller: Caller, now: number): Response | null {
    const perMinute = caller.account.plan.requestsPerMinute;
    let bucket = this.buckets.get(caller.keyId);
    if (bucket === undefined) this.buckets.set(caller.keyId, (bucket = { tokens: perMinute, updated: now }));
    bucket.tokens = Math.min(perMinute, bucket.tokens + ((now - bucket.updated) / 60_000) * perMinute);
    bucket.updated = now;
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil(((1 - bucket.tokens) / perMinute) * 60));
      return c.json(
        { detail: `Rate limit exceeded: ${perMinute} requests per minute for this API key; retry after ${retryAfter} s` },
        429,
        { 'retry-after': String(retryAfter) },
      );
    }
    bucket.tokens -= 1;
    return null;
  }
}
