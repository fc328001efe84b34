// How many connections a process's main pool opens to PostgreSQL. A server on this machine runs on
// the same cores as the service: more statements at once than there are cores only wait for a core,
// and every busy backend takes its share of CPU time from the service's event loop, which requests
// then wait for (on 2 cores, `npm run bench:api` on PostgreSQL: a pool of 2 instead of 10 took the
// burst's submit p99 from 72-79 ms to 55-75 ms, for about 8% fewer submits per second). A remote
// server keeps postgres.js's default of 10, which also covers the network's round trips. `?max=N` in
// the URL says how many instead.

export const REMOTE_POOL_SIZE = 10;

/** The main pool's size for `url` on a machine with `cores` cores. Throws when the URL's `max` is not a positive integer. */
export function mainPoolSize(url: string, cores: number, env: Record<string, string | undefined> = process.env): number {
  // Read apart from URL: postgres.js also takes several hosts (h1:5432,h2:5432), which URL refuses.
  const given = new URLSearchParams(url.split('?')[1] ?? '').get('max');
  if (given !== null) {
    const max = Number(given);
    if (!Number.isSafeInteger(max) || max < 1)
      throw new Error(`FFOP_DATABASE_URL: max must be a whole number of connections (1 or more), got "${given}"`);
    return max;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return REMOTE_POOL_SIZE; // several hosts: not one machine
  }
  // No host in the URL: postgres.js takes PGHOST, else localhost.
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || env.PGHOST || 'localhost';
  return onThisMachine(host) ? Math.min(REMOTE_POOL_SIZE, Math.max(2, cores)) : REMOTE_POOL_SIZE;
}

/** Loopback addresses, localhost, or a Unix socket's folder. */
function onThisMachine(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host) || host.startsWith('/');
}

// When the server cannot be reached, a query must fail in about a second (the API answers 503), not
// wait: postgres.js waits 30 s for a connection by default, and between failed attempts up to 20 s.
/** Seconds to open a connection (`?connect_timeout=N` in the URL says otherwise). */
export const CONNECT_TIMEOUT_SECONDS = 5;
/** A statement that runs longer is cancelled by the server (`?statement_timeout=<ms>`, 0 for none). */
export const STATEMENT_TIMEOUT_MS = 30_000;
/** The longest wait between a failed connection and the next attempt. */
export const MAX_RECONNECT_DELAY_SECONDS = 1;

/** The outage-related options of every pool opened on `url`: the URL's own settings win. */
export function outageOptions(url: string): {
  connect_timeout?: number;
  backoff: (retries: number) => number;
  connection: { statement_timeout: number };
} {
  const query = new URLSearchParams(url.split('?')[1] ?? '');
  return {
    ...(query.has('connect_timeout') ? {} : { connect_timeout: CONNECT_TIMEOUT_SECONDS }),
    // postgres.js's own curve (3^n / 100 s, with jitter), capped.
    backoff: (retries) => (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, MAX_RECONNECT_DELAY_SECONDS),
    // The URL's statement_timeout is a connection parameter that postgres.js applies after this one.
    connection: { statement_timeout: STATEMENT_TIMEOUT_MS },
  };
}
