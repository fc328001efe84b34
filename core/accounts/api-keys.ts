// API keys look like "ffo_<id>_<secret>". Only a hash of the secret is stored; the id finds the row
// and the secret is compared in constant time, so a lookup never reveals how much of a key matched.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface NewKey {
  id: string;
  secretHash: string;
  /** The full key, shown once to whoever created it. */
  plaintext: string;
}

export function generateKey(): NewKey {
  const id = randomBytes(6).toString('hex');
  const secret = randomBytes(24).toString('base64url');
  return { id, secretHash: hashSecret(secret), plaintext: `ffo_${id}_${secret}` };
}

export function splitKey(plaintext: string): { id: string; secret: string } | null {
  const m = /^ffo_([0-9a-f]{12})_([A-Za-z0-9_-]{32})$/.exec(plaintext);
  return m ? { id: m[1], secret: m[2] } : null;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
