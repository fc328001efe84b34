// Input URLs that point at this service's own storage are read straight from storage (through a fresh
// presigned URL) instead of over the network: no SSRF exception is needed for the service's own
// address, and a stored file's URL works as an input as the spec promises.
import type { Storage } from '../core/storage/storage.ts';

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

/** The storage key a URL names, or null when the URL is not one of this storage's URLs. */
export async function storageKeyOfUrl(storage: Storage, url: string): Promise<string | null> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const bare = `${u.origin}${u.pathname}`;
  const prefix = (await ownPrefixes(storage)).find((p) => bare.startsWith(p));
  if (!prefix) return null;
  try {
    const key = bare.slice(prefix.length).split('/').map(decodeURIComponent).join('/');
    return key.length > 0 ? key : null;
  } catch {
    return null;
  }
}

/** An account reads its own files, public or private, and anyone's public files. */
export function accountMayRead(key: string, accountId: string): boolean {
  const [visibility, owner] = key.split('/');
  return visibility === 'public' || owner === accountId;
}
