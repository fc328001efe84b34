// Per-key rate limit (token bucket, requests per minute by plan). In memory: with several API
// replicas each enforces its own share.
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './auth.ts';

interface Bucket {
  tokens: number;
  updated: number;
}

export function rateLimit(clock: () => number = Date.now): MiddlewareHandler<AppEnv> {
  const buckets = new Map<string, Bucket>();
  return async (c, next) => {
    const caller = c.get('caller');
    const perMinute = caller.account.plan.requestsPerMinute;
    const now = clock();
    const bucket = buckets.get(caller.keyId) ?? { tokens: perMinute, updated: now };
    bucket.tokens = Math.min(perMinute, bucket.tokens + ((now - bucket.updated) / 60_000) * perMinute);
    bucket.updated = now;
    buckets.set(caller.keyId, bucket);
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil(((1 - bucket.tokens) / perMinute) * 60));
      return c.json(
        { detail: `Rate limit exceeded: ${perMinute} requests per minute for this API key; retry after ${retryAfter} s` },
        429,
        {
          'retry-after': String(retryAfter),
        },
      );
    }
    bucket.tokens -= 1;
    await next();
  };
}
