// Storage.putFile, the same for every backend: only a regular file is stored; a backend that can take
// the file's bytes without copying them (LocalStorage, by a hard link on the same filesystem) does,
// else the bytes are streamed through its put().
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Storage } from './storage.ts';

/** Stores the file as `key` without a copy of its bytes; false when it cannot (another filesystem...). */
export type StoreWithoutCopy = (key: string, path: string, contentType: string) => Promise<boolean>;

export async function putFile(
  storage: Pick<Storage, 'put'>,
  key: string,
  path: string,
  contentType: string,
  withoutCopy?: StoreWithoutCopy,
): Promise<{ size: number }> {
  const info = await stat(path);
  if (!info.isFile()) throw new Error(`not a regular file: ${path}`);
  if (withoutCopy && (await withoutCopy(key, path, contentType))) return { size: info.size };
  await storage.put(key, createReadStream(path), { size: info.size, contentType });
  return { size: info.size };
}
