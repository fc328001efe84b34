// Local storage stores an output only once it is on disk (a sync). A large output written by ffmpeg
// sits in the page cache until then, and syncing 277 MB at the end took ~0.15 s here. While ffmpeg
// runs, this has the disk write each output back as it grows, so that sync finds little left.
// ffmpeg owns the output folder: a path may be a FIFO or a link by now; both are left alone (opened
// without following links or waiting, then seen not to be a regular file).
import { constants } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';

export interface WriteBehindOptions {
  /** How often the outputs' sizes are looked at; default 50 ms. */
  everyMs?: number;
  /** Growth since the last sync that is worth another; default 16 MiB. */
  minBytes?: number;
  /** What writes a file back; default fdatasync. */
  sync?: (file: FileHandle) => Promise<void>;
}

export interface WriteBehind {
  /** Stops looking, after the sync under way (if any) is done. */
  stop(): Promise<void>;
}

export function startWriteBehind(paths: string[], o: WriteBehindOptions = {}): WriteBehind {
  const everyMs = o.everyMs ?? 50;
  const minBytes = o.minBytes ?? 16 << 20;
  const synced = new Map<string, number>(paths.map((path) => [path, 0]));
  let stopped = false;
  let wake: (() => void) | null = null;
  const loop = (async () => {
    while (!stopped) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, everyMs).unref();
      });
      for (const path of paths) {
        if (stopped) break;
        const size = await regularFileSize(path);
        if (size === null || size - synced.get(path)! < minBytes) continue;
        if (await writeBack(path, o.sync)) synced.set(path, size);
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}

async function regularFileSize(path: string): Promise<number | null> {
  const info = await lstat(path).catch(() => null);
  return info?.isFile() ? info.size : null;
}

/**
 * Has the disk write the file back; false when it is not a regular file or anything fails. Only a head
 * start: the storage's own sync still writes the file.
 */
export async function writeBack(path: string, sync: (file: FileHandle) => Promise<void> = (file) => file.datasync()): Promise<boolean> {
  const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
  if (file === null) return false;
  try {
    if (!(await file.stat()).isFile()) return false;
    await sync(file);
    return true;
  } catch {
    return false;
  } finally {
    await file.close();
  }
}
