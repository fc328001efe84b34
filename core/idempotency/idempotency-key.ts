// The Idempotency-Key header's rules and a request's fingerprint, without I/O.
import { createHash } from 'node:crypto';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Printable ASCII (0x20-0x7E), 1 to 255 characters. */
const VALID = /^[\x20-\x7E]{1,255}$/;
/**
 * The same for the OpenAPI document, without a space first or last: HTTP drops spaces around a header
 * value, so a key of spaces only would arrive empty.
 */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]([\\x20-\\x7E]{0,253}[\\x21-\\x7E])?$';

/** Why a header value is not a valid key, or null when it is. */
export function idempotencyKeyProblem(value: string): string | null {
  if (value.length === 0) return 'Idempotency-Key must not be empty';
  if (value.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    return `Idempotency-Key must have at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters (it has ${value.length})`;
  }
  if (!VALID.test(value)) return 'Idempotency-Key must consist of printable ASCII characters (0x20-0x7E)';
  return null;
}

/**
 * What makes two requests "the same": method, path and the exact body bytes. The path is the one the
 * route matched (no query string: the creating POSTs take none).
 */
export function requestFingerprint(method: string, path: string, body: Uint8Array): string {
  const bodyHash = createHash('sha256').update(body).digest('hex');
  return createHash('sha256').update(`${method.toUpperCase()}\n${path}\n${bodyHash}`).digest('hex');
}

/** Answers worth keeping for a repeat: 2xx and 4xx, but not 429 (a repeat after the wait must run). */
export function isStorableStatus(status: number): boolean {
  return (status >= 200 && status < 300) || (status >= 400 && status < 500 && status !== 429);
}
