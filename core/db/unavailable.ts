// Errors that mean "the database cannot be reached right now" (as opposed to a bad statement or a
// bug): the API answers them with 503 and Retry-After, background workers wait for the database.

/** Thrown where work is refused without trying, because the database is known to be down. */
export class DatabaseUnavailable extends Error {
  constructor(cause?: unknown) {
    super('the database cannot be reached', { cause });
    this.name = 'DatabaseUnavailable';
  }
}

/** Node's socket errors and postgres.js's own connection errors. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
]);

/**
 * PostgreSQL's SQLSTATEs for the same: class 08 (connection exception), the server shutting down or
 * starting up (57P01-57P03), and no connection slot left (53300).
 */
function isUnavailableState(code: string): boolean {
  return /^08[0-9A-Z]{3}$/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/** True when `err`, or an error it wraps (drizzle wraps the driver's in `cause`), says the database cannot be reached. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DatabaseUnavailable) return true;
    const code = (e as { code?: unknown }).code;
    // A socket error counts only as postgres.js hands it to a query (it adds `query`): an
    // ECONNREFUSED from an HTTP download is not the database's.
    if (typeof code === 'string' && ((CONNECTION_CODES.has(code) && 'query' in e) || isUnavailableState(code))) return true;
    // Connecting to a name with several addresses (localhost: ::1 and 127.0.0.1) fails with all of them.
    if (
      e instanceof AggregateError &&
      'query' in e &&
      e.errors.some((inner) => CONNECTION_CODES.has((inner as { code?: string }).code ?? ''))
    )
      return true;
  }
  return false;
}
