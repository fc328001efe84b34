// What every /v1 request passes before its route, in this order: the database's health (503 at once
// while it cannot be reached), the body limit (requests with a body), the failed-key throttle (of its
// address and of the service, skipped by a key this process has seen authenticate), the API key, the
// key's rate limit, and the methods
// its path supports. One middleware rather than five: each layer of Hono's middleware chain costs
// promises and microtask turns, and polls pay them thousands of times a second.
import type { MiddlewareHandler } from 'hono';
import type { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import type { AuthFailureLimit } from './auth-failure-limit.ts';
import { INVALID_KEY, type AppEnv } from './auth.ts';
import type { RateLimit } from './rate-limit.ts';
import { answerUnroutedMethod } from '../routes/allowed-methods.ts';
import { databaseUnavailable } from './database-unavailable.ts';

export interface V1GateDeps {
  /** Refuses bodies over the limit; GET and HEAD bodies are never read, so they skip it. */
  limitBody: MiddlewareHandler<AppEnv>;
  authFailures: AuthFailureLimit;
  accounts: Pick<AccountsRepo, 'authenticate'>;
  rateLimit: RateLimit;
  /** The Allow header of a path, null when no route matches it. */
  allowOf: (path: string) => string | null;
  /** Milliseconds since the epoch. */
  clock: () => number;
  /** Whether the database can be reached (database-health.ts); absent: always. */
  databaseUp?: () => boolean;
}

export function v1Gate(d: V1GateDeps): MiddlewareHandler<AppEnv> {
  const checks: MiddlewareHandler<AppEnv> = async (c, next) => {
    const key = c.req.header('x-api-key')?.trim();
    const client = d.authFailures.clientOf(c);
    // Before an unknown key is looked up: guessing keys is throttled, not just failed. A known key
    // is not, so that guesses from its address cannot lock its client out.
    const throttled = d.authFailures.refusal(c, client, d.clock());
    const known = throttled !== null && key !== undefined && d.authFailures.isKnownKey(key, d.clock());
    if (throttled && !known) return throttled;
    let caller = null;
    if (key) {
      if (!known) d.authFailures.lookupStarted(client);
      try {
        caller = await d.accounts.authenticate(key);
      } finally {
        if (!known) d.authFailures.lookupEnded(client);
      }
    }
    if (!caller) {
      d.authFailures.failed(client, d.clock());
      if (known) d.authFailures.forgetKey(key);
      return c.json({ detail: INVALID_KEY }, 401);
    }
    d.authFailures.succeeded(key!, d.clock());
    const limited = d.rateLimit.refusal(c, caller, d.clock());
    if (limited) return limited;
    // Before routing, so a literal route wins over a parameter.
    const unrouted = answerUnroutedMethod(c, d.allowOf(c.req.path));
    if (unrouted) return unrouted;
    c.set('caller', caller);
    await next();
  };
  // Looking for a GET's body would make @hono/node-server build a whole fetch Request for every poll.
  return (c, next) => {
    if (d.databaseUp && !d.databaseUp()) return Promise.resolve(databaseUnavailable(c));
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return checks(c, next);
    // Inside another middleware an answer must be set on the context: its return value is dropped.
    return d.limitBody(c, async () => {
      const refused = await checks(c, next);
      if (refused) c.res = refused;
    });
  };
}
