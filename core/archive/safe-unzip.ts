// Extracts a zip that comes from a client (hostile) into a folder. yauzl already refuses absolute
// names and '..'; here we also refuse symlinks and other special entries, entries into reserved
// folders, too many entries, too many bytes (declared and actually inflated) and bomb-like ratios.
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';

export interface UnzipLimits {
  maxEntries: number;
  maxTotalBytes: number;
  /** Uncompressed/compressed ratio allowed for entries larger than 1 MiB. */
  maxRatio: number;
  /** First path segments that entries may not use (the service's own folders). */
  reservedTopLevel?: string[];
}

export class ArchiveRefused extends Error {}

export const DEFAULT_UNZIP_LIMITS: UnzipLimits = { maxEntries: 10_000, maxTotalBytes: 20 * 1024 ** 3, maxRatio: 1000 };

export interface Extracted {
  files: string[];
  totalBytes: number;
}

export async function safeUnzip(zipPath: string, destDir: string, limits: UnzipLimits): Promise<Extracted> {
  const zip = await new Promise<yauzl.ZipFile>((res, rej) =>
    yauzl.open(zipPath, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true }, (err, z) => (err ? rej(new ArchiveRefused(`not a readable zip archive: ${err.message}`)) : res(z!))),
  );
  const files: string[] = [];
  let totalBytes = 0;
  let entries = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (err: unknown) => {
        zip.close();
        reject(err instanceof ArchiveRefused ? err : new ArchiveRefused(`zip archive refused: ${(err as Error).message}`));
      };
      zip.on('error', fail);
      zip.on('end', resolve);
      zip.on('entry', (entry: yauzl.Entry) => {
        void (async () => {
          entries += 1;
          if (entries > limits.maxEntries) throw new ArchiveRefused(`zip archive has more than ${limits.maxEntries} entries`);
          const name = entry.fileName;
          const mode = (entry.externalFileAttributes >>> 16) & 0o170000;
          const isDir = name.endsWith('/');
          if (mode !== 0 && mode !== 0o100000 && mode !== 0o040000) {
            throw new ArchiveRefused(`zip entry "${name}" is a symbolic link or special file; only files and folders are accepted`);
          }
          const target = normalize(join(destDir, name));
          if (!target.startsWith(destDir + sep) && target !== destDir) throw new ArchiveRefused(`zip entry "${name}" points outside the folder`);
          const top = relative(destDir, target).split(sep)[0]; // normalized, so "./.out/x" counts as ".out"
          if (limits.reservedTopLevel?.includes(top)) throw new ArchiveRefused(`zip entry "${name}" uses the reserved folder name "${top}"`);
          if (isDir) {
            await mkdir(target, { recursive: true });
            zip.readEntry();
            return;
          }
          totalBytes += entry.uncompressedSize;
          if (totalBytes > limits.maxTotalBytes) throw new ArchiveRefused(`zip archive inflates to more than ${limits.maxTotalBytes} bytes`);
          if (entry.uncompressedSize > 1024 * 1024 && entry.uncompressedSize / Math.max(1, entry.compressedSize) > limits.maxRatio) {
            throw new ArchiveRefused(`zip entry "${name}" has a compression ratio above ${limits.maxRatio}: refused as a zip bomb`);
          }
          await mkdir(dirname(target), { recursive: true });
          const stream = await new Promise<NodeJS.ReadableStream>((res, rej) => zip.openReadStream(entry, (err, s) => (err ? rej(err) : res(s!))));
          // Count what is actually inflated too: declared sizes can lie (yauzl checks them, this is the backstop).
          let inflated = 0;
          const counter = new Transform({
            transform(chunk: Buffer, _enc, cb) {
              inflated += chunk.length;
              cb(inflated > entry.uncompressedSize ? new ArchiveRefused(`zip entry "${name}" inflates past its declared size`) : null, chunk);
            },
          });
          await pipeline(stream, counter, createWriteStream(target, { flags: 'wx' }));
          files.push(name);
          zip.readEntry();
        })().catch(fail);
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return { files, totalBytes };
}
