// Input URLs that point at this service's own storage are read straight from storage (through a fresh
// presigned URL) instead of over the network: no SSRF exception is needed for the service's own
// address, and a stored file's URL works as an input as the spec promises.
import type { Storage } from '../core/storage/storage.ts';

const PROBE_KEY = 'public/x';

/** The storage key a URL names, or null when the URL is not one of this storage's URLs. */
export function storageKeyOfUrl(storage: Storage, url: string): string | null {
  const sample = storage.publicUrl(PROBE_KEY);
  const prefix = sample.slice(0, -PROBE_KEY.length);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const bare = `${u.origin}${u.pathname}`;
  if (!bare.startsWith(prefix)) return null;
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
