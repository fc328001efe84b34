import type { Caller } from '../../core/accounts/accounts-repo.ts';

/** What a /v1 route finds in its context: the caller the gate authenticated (v1-gate.ts). */
export type AppEnv = { Variables: { caller: Caller } };

export const INVALID_KEY = 'Invalid authorization key: send a valid API key in the X-API-KEY header';
