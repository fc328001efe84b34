// The data folder holds the database, the stored files (other accounts' private files among them),
// the URL signing key and the first API key: only the service's own user may read any of it. Run at
// every start, so folders made by older versions, by PGlite (which creates its files 0666), or
// loosened by hand are closed again. Folders become 0700 and files 0600.
// The work folder is closed at its top only: ffmpeg runs as another uid with just its step folder
// bind-mounted, so the step folders inside are the runner's business.
import { chmod, lstat, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

export interface DataPaths {
  dataDir: string;
  /** `pglite:<folder>`, `pglite:memory` or `postgres://...`: only a PGlite folder is ours to close. */
  databaseUrl: string;
  /** 'local' keeps stored files in storageDir; with 's3' the folder is not used. */
  storage: string;
  storageDir: string;
  workDir: string;
}

/** Files the service keeps directly in the data folder. */
export const SECRET_FILE_NAMES = ['signing-key', 'initial-api-key'];

/** Creates the service's folders if missing and makes them (and what they hold) private. */
export async function secureDataPermissions(paths: DataPaths): Promise<void> {
  await privateDir(paths.dataDir);
  for (const name of SECRET_FILE_NAMES) await privateFileIfPresent(join(paths.dataDir, name));
  const database = pgliteFolder(paths.databaseUrl);
  if (database !== null) {
    await privateDir(database);
    await privateTree(database);
  }
  if (paths.storage === 'local') {
    await privateDir(paths.storageDir);
    await privateTree(paths.storageDir);
  }
  await privateDir(paths.workDir);
}

function pgliteFolder(databaseUrl: string): string | null {
  if (!databaseUrl.startsWith('pglite:')) return null;
  const folder = databaseUrl.slice('pglite:'.length);
  return folder === 'memory' ? null : folder;
}

/** mkdir -p, then 0700 on the folder itself (a configured path may be a symlink to a folder: followed). */
async function privateDir(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (((await stat(path)).mode & 0o777) !== PRIVATE_DIR_MODE) await setMode(path, PRIVATE_DIR_MODE);
}

async function privateFileIfPresent(path: string): Promise<void> {
  await modeIfDifferent(path, PRIVATE_FILE_MODE);
}

/**
 * Everything under `root`: folders 0700, files 0600. Symbolic links are neither followed nor changed
 * (chmod would act on their target, which may be anywhere); sockets and other special files are left.
 */
async function privateTree(root: string): Promise<void> {
  const pending = [root];
  while (pending.length > 0) {
    const dir = pending.pop()!;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // removed meanwhile
      throw err;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        await modeIfDifferent(path, PRIVATE_DIR_MODE);
        pending.push(path);
      } else if (entry.isFile()) {
        await modeIfDifferent(path, PRIVATE_FILE_MODE);
      }
    }
  }
}

/** Sets `mode` on a folder (0700) or a regular file (0600) at `path`; links and other kinds are left alone. */
async function modeIfDifferent(path: string, mode: number): Promise<void> {
  let info;
  try {
    info = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const fits = mode === PRIVATE_DIR_MODE ? info.isDirectory() : info.isFile();
  if (fits && (info.mode & 0o777) !== mode) await setMode(path, mode);
}

async function setMode(path: string, mode: number): Promise<void> {
  try {
    await chmod(path, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    throw new Error(
      `cannot make ${path} private (mode ${mode.toString(8)}): ${code ?? (err as Error).message}; ` +
        "the service's user must own its data folders",
    );
  }
}
