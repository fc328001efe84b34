// The engine's own temporary folders in the work folder (a store-file download or an upload's probe:
// file-*; a playlist being unpacked: playlist-*) are removed when their work ends; a process killed
// meanwhile leaves them behind. Nothing else uses them, so the next start removes them all.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Prefixes of the folders mkdtemp makes for the engine's work (file-tasks.ts, playlist-unpack.ts). */
export const ENGINE_TEMP_PREFIXES = ['file-', 'playlist-'] as const;

/** Removes the engine's left-over temporary folders in `workDir`; returns their names. */
export async function removeLeftoverTempDirs(workDir: string): Promise<string[]> {
  const entries = await readdir(workDir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  const leftovers = entries.filter((e) => e.isDirectory() && ENGINE_TEMP_PREFIXES.some((p) => e.name.startsWith(p))).map((e) => e.name);
  for (const name of leftovers) await rm(join(workDir, name), { recursive: true, force: true });
  return leftovers;
}
