import type { MiddlewareHandler } from 'hono';
import type { AccountsRepo, Caller } from '../core/accounts/accounts-repo.ts';

export type AppEnv = { Variables: { caller: Caller } };

export const INVALID_KEY = 'Invalid authorization key: send a valid API key in the X-API-KEY header';

export function requireApiKey(accounts: AccountsRepo): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const key = c.req.header('x-api-key');
    const caller = key ? await accounts.authenticate(key.trim()) : null;
    if (!caller) return c.json({ detail: INVALID_KEY }, 401);
    c.set('caller', caller);
    await next();
  };
}
