// A playlist output arrives as one zip (the runner cannot know its segment names in advance); here
// it is unpacked into the output's storage folder, so the manifest's URL and its relative segment
// URLs all resolve, then the zip is removed.
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { DEFAULT_UNZIP_LIMITS, safeUnzip } from '../archive/safe-unzip.ts';
import { contentTypeForFileName } from '../media/mime.ts';
import type { Storage } from '../storage/storage.ts';

export async function unpackPlaylist(storage: Storage, stagingKey: string, destPrefix: string, workDir: string): Promise<string[]> {
  await mkdir(workDir, { recursive: true });
  const dir = await mkdtemp(join(workDir, 'playlist-'));
  try {
    const zipPath = join(dir, 'playlist.zip');
    await pipeline(await storage.read(stagingKey), createWriteStream(zipPath));
    const unpacked = join(dir, 'files');
    await mkdir(unpacked);
    const { files } = await safeUnzip(zipPath, unpacked, DEFAULT_UNZIP_LIMITS);
    for (const name of files) {
      await storage.putFile(destPrefix + name, join(unpacked, name), contentTypeForFileName(name));
    }
    await storage.delete(stagingKey);
    return files;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
