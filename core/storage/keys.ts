// The rules every storage backend applies to object keys, so an object stored in one mode can be
// stored in the other, and a key can never leave its folder or shift fields in a signed string.
export const MAX_KEY_BYTES = 1024;
// Below NAME_MAX (255) so temp and sidecar names built from a segment stay valid too.
export const MAX_KEY_SEGMENT_BYTES = 255; // a file name on common filesystems; the API allows 255-character names
/** Keys under this first segment are served to anyone without a signature. */
export const PUBLIC_KEY_PREFIX = 'public/';

export class InvalidStorageKey extends Error {
  constructor(key: unknown, why: string) {
    super(`invalid storage key ${JSON.stringify(key)}: ${why}`);
    this.name = 'InvalidStorageKey';
  }
}

// Control characters would let a key shift fields in the signed string or split headers.
const FORBIDDEN_KEY_CHARS = /[\u0000-\u001f\u007f\\]/;

export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidStorageKey(key, 'empty');
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new InvalidStorageKey(key, 'too long');
  if (FORBIDDEN_KEY_CHARS.test(key)) throw new InvalidStorageKey(key, 'control character or backslash');
  for (const segment of key.split('/')) assertValidSegment(key, segment);
}

function assertValidSegment(key: string, segment: string): void {
  // An empty first segment is a leading '/', i.e. an absolute path.
  if (segment === '') throw new InvalidStorageKey(key, 'absolute or empty path segment');
  if (segment === '.' || segment === '..') throw new InvalidStorageKey(key, "'.' or '..' segment");
  if (Buffer.byteLength(segment) > MAX_KEY_SEGMENT_BYTES) throw new InvalidStorageKey(key, 'segment too long');
}

/** A deletePrefix() argument: like a key, but its last segment may be partial or empty. */
export function assertValidPrefix(prefix: string): void {
  if (typeof prefix !== 'string' || prefix.length === 0) throw new InvalidStorageKey(prefix, 'empty prefix');
  if (Buffer.byteLength(prefix) > MAX_KEY_BYTES) throw new InvalidStorageKey(prefix, 'too long');
  if (FORBIDDEN_KEY_CHARS.test(prefix)) throw new InvalidStorageKey(prefix, 'control character or backslash');
  const segments = prefix.split('/');
  segments.pop();
  for (const segment of segments) assertValidSegment(prefix, segment);
}

export function isPublicKey(key: string): boolean {
  return key.startsWith(PUBLIC_KEY_PREFIX);
}

/** Each segment percent-encoded, so the URL path maps back to exactly this key. */
export function encodeKeyForUrl(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}
