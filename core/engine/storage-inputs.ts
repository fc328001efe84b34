// Input URLs that point at this service's own storage are read straight from storage (through a fresh
// presigned URL) instead of over the network: no SSRF exception is needed for the service's own
// address, and a stored file's URL works as an input as the spec promises.
import { assertValidKey, InvalidStorageKey } from '../storage/keys.ts';
import type { Storage } from '../storage/storage.ts';

const PROBE_KEY = 'public/x';
const prefixesOf = new WeakMap<Storage, string[]>();

/** URL prefixes under which a storage serves keys: its public URLs and its presigned URLs (S3: the bucket). */
async function ownPrefixes(storage: Storage): Promise<string[]> {
  let prefixes = prefixesOf.get(storage);
  if (!prefixes) {
    const bare = (url: string) => {
      const u = new URL(url);
      return `${u.origin}${u.pathname}`;
    };
    const samples = [storage.publicUrl(PROBE_KEY), await storage.presignGet(PROBE_KEY, 60)];
    prefixes = [...new Set(samples.map((s) => bare(s).slice(0, -PROBE_KEY.length)))];
    prefixesOf.set(storage, prefixes);
  }
  return prefixes;
}

export type StorageUrl =
  | { kind: 'external' }
  | { kind: 'storage'; key: string }
  /** On this storage, but the path decodes to no valid key (an encoded '/', '..', NUL, a bad escape). */
  | { kind: 'invalid'; reason: string };

/** Whether a URL is one of this storage's URLs, and which key it names. */
export async function classifyStorageUrl(storage: Storage, url: string): Promise<StorageUrl> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { kind: 'external' };
  }
  const bare = `${u.origin}${u.pathname}`;
  const prefix = (await ownPrefixes(storage)).find((p) => bare.startsWith(p));
  if (!prefix) return { kind: 'external' };
  const path = bare.slice(prefix.length);
  if (path.length === 0) return { kind: 'external' }; // no file name: the download says so
  let key: string;
  try {
    key = path.split('/').map(decodeURIComponent).join('/');
  } catch {
    return { kind: 'invalid', reason: 'a malformed percent-escape' };
  }
  // The key is checked here, where the URL is judged: an encoded '../' would otherwise reach storage
  // (and "public/../private/<other account>/..." would pass accountMayRead).
  try {
    assertValidKey(key);
  } catch (err) {
    if (err instanceof InvalidStorageKey) return { kind: 'invalid', reason: err.message };
    throw err;
  }
  return { kind: 'storage', key };
}

/**
 * The storage key a URL names, or null when it is not one of this storage's valid URLs. A URL on the
 * storage that names no valid key is null too: fetched like any other URL, it is refused there (the
 * submit endpoints refuse it earlier, with invalidStorageUrl).
 */
export async function storageKeyOfUrl(storage: Storage, url: string): Promise<string | null> {
  const found = await classifyStorageUrl(storage, url);
  return found.kind === 'storage' ? found.key : null;
}

/** For a 422: why `url` points at this service's storage without naming a valid file; null when fine. */
export async function invalidStorageUrl(storage: Storage, url: string): Promise<string | null> {
  const found = await classifyStorageUrl(storage, url);
  if (found.kind !== 'invalid') return null;
  return (
    `Value error, this is a storage URL of this service but its path names no valid file (${found.reason}); ` +
    'use the storage_url exactly as the service returned it'
  );
}

/** An account reads its own files, public or private, and anyone's public files. */
export function accountMayRead(key: string, accountId: string): boolean {
  const [visibility, owner] = key.split('/');
  return visibility === 'public' || owner === accountId;
}
