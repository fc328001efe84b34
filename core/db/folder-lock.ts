import { open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface FolderLock {
  release(): Promise<void>;
}

/** Exclusive lock on a folder through `<folder>/.lock` holding the owner's pid; stale locks are taken over. */
export async function acquireFolderLock(folder: string): Promise<FolderLock> {
  const path = join(folder, '.lock');
  for (let tries = 0; tries < 2; tries++) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return { release: () => unlink(path).catch(() => {}) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (owner && owner !== process.pid && isAlive(owner)) {
        throw new Error(`data folder ${folder} is in use by process ${owner}; stop it first`);
      }
      await unlink(path).catch(() => {});
    }
  }
  throw new Error(`could not lock data folder ${folder}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
