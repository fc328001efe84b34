// PostgreSQL's unique_violation, as postgres.js and PGlite report it (drizzle wraps it as the cause).
const UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === UNIQUE_VIOLATION) return true;
  }
  return false;
}
