// The answer while the database cannot be reached: 503 in the API's error shape, with Retry-After,
// at once (database-health.ts knows without waiting) rather than a hang or a 500.
import type { Context } from 'hono';

/** Seconds a client should wait before it tries again: a few of the health checks' intervals. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export function databaseUnavailable(c: Context): Response {
  return c.json({ detail: `The service cannot reach its database right now; retry after ${DATABASE_RETRY_AFTER_SECONDS} s` }, 503, {
    'retry-after': String(DATABASE_RETRY_AFTER_SECONDS),
  });
}
