// Writes a zip of files (relative names inside `baseDir`) to `zipPath`, streaming each file.
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';

export async function zipFiles(baseDir: string, names: string[], zipPath: string): Promise<{ size: number; totalBytes: number }> {
  const zip = new yazl.ZipFile();
  let totalBytes = 0;
  for (const name of names) {
    const s = await stat(join(baseDir, name));
    totalBytes += s.size;
    // Media is already compressed: storing it is as small and much faster.
    zip.addFile(join(baseDir, name), name, {
      compress: !/\.(mp4|m4s|ts|mkv|webm|mov|mp3|aac|m4a|jpg|jpeg|png|webp|gif|opus|ogg|flac)$/i.test(name),
    });
  }
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(zipPath));
  return { size: (await stat(zipPath)).size, totalBytes };
}
