// Extracts a zip that comes from a client (hostile) into a folder. yauzl already refuses absolute
// names and '..'; here we also refuse symlinks and other special entries, entries into reserved
// folders, too many entries, too many bytes (declared and actually inflated), bomb-like ratios (per
// entry and for the whole archive), entries whose bytes overlap (one compressed stream listed under
// many names inflates many times over), and entries whose CRC-32 does not match.
// Two passes: the whole central directory is checked before anything is written; then extraction.
import { createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';

export interface UnzipLimits {
  maxEntries: number;
  maxTotalBytes: number;
  /**
   * Uncompressed/compressed ratio allowed for entries larger than 1 MiB, and for the whole archive
   * (total uncompressed / archive file size) once it inflates past 1 MiB.
   */
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

// Ratios of tiny inputs say nothing (a few KB of zeros compress 1000:1): only larger ones are judged.
const RATIO_THRESHOLD_BYTES = 1024 * 1024;

interface Planned {
  entry: yauzl.Entry;
  name: string;
  target: string;
  isDir: boolean;
}

export async function safeUnzip(zipPath: string, destDir: string, limits: UnzipLimits): Promise<Extracted> {
  const archiveBytes = (await stat(zipPath)).size;
  const zip = await new Promise<yauzl.ZipFile>((res, rej) =>
    yauzl.open(
      zipPath,
      // autoClose off: the entries are read first and extracted after, from the same open file.
      { lazyEntries: true, autoClose: false, validateEntrySizes: true, strictFileNames: true },
      (err, z) => (err ? rej(new ArchiveRefused(`not a readable zip archive: ${err.message}`)) : res(z)),
    ),
  );
  try {
    const plan = await checkArchive(zip, destDir, limits, archiveBytes);
    return await extract(zip, plan);
  } catch (err) {
    throw err instanceof ArchiveRefused ? err : new ArchiveRefused(`zip archive refused: ${(err as Error).message}`);
  } finally {
    zip.close();
  }
}

/** Reads the whole central directory (and each local header's length) and refuses what is hostile. */
async function checkArchive(zip: yauzl.ZipFile, destDir: string, limits: UnzipLimits, archiveBytes: number): Promise<Planned[]> {
  if (zip.entryCount > limits.maxEntries) throw new ArchiveRefused(`zip archive has more than ${limits.maxEntries} entries`);
  const entries = await readEntries(zip, limits.maxEntries);
  const plan: Planned[] = [];
  const targets = new Set<string>();
  let totalBytes = 0;
  for (const entry of entries) {
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
    if (!isDir) {
      if (targets.has(target)) throw new ArchiveRefused(`zip entry "${name}" appears more than once`);
      targets.add(target);
      totalBytes += entry.uncompressedSize;
      if (totalBytes > limits.maxTotalBytes) throw new ArchiveRefused(`zip archive inflates to more than ${limits.maxTotalBytes} bytes`);
      if (entry.uncompressedSize > RATIO_THRESHOLD_BYTES && entry.uncompressedSize / Math.max(1, entry.compressedSize) > limits.maxRatio) {
        throw new ArchiveRefused(`zip entry "${name}" has a compression ratio above ${limits.maxRatio}: refused as a zip bomb`);
      }
    }
    plan.push({ entry, name, target, isDir });
  }
  if (totalBytes > RATIO_THRESHOLD_BYTES && totalBytes / Math.max(1, archiveBytes) > limits.maxRatio) {
    throw new ArchiveRefused(
      `zip archive inflates ${archiveBytes} bytes to ${totalBytes}: ` +
        `the whole archive's compression ratio is above ${limits.maxRatio}; refused as a zip bomb`,
    );
  }
  await refuseOverlaps(zip, entries);
  return plan;
}

function readEntries(zip: yauzl.ZipFile, maxEntries: number): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    zip.on('error', reject);
    zip.on('end', () => resolve(entries));
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      if (entries.length > maxEntries) return reject(new ArchiveRefused(`zip archive has more than ${maxEntries} entries`));
      zip.readEntry();
    });
    zip.readEntry();
  });
}

/**
 * Each entry occupies its local header and its compressed bytes; in an honest archive those spans are
 * disjoint. Two entries sharing bytes (the same offset, or a header inside another entry's data) let
 * a small archive inflate many times over, past every per-entry check.
 */
async function refuseOverlaps(zip: yauzl.ZipFile, entries: yauzl.Entry[]): Promise<void> {
  const spans: { start: number; end: number; name: string }[] = [];
  for (const entry of entries) {
    const { fileDataStart } = await zip.readLocalFileHeaderPromise(entry, { minimal: true });
    spans.push({ start: entry.relativeOffsetOfLocalHeader, end: fileDataStart + entry.compressedSize, name: entry.fileName });
  }
  spans.sort((a, b) => a.start - b.start);
  for (let i = 1; i < spans.length; i++) {
    if (spans[i].start < spans[i - 1].end) {
      throw new ArchiveRefused(`zip entries "${spans[i - 1].name}" and "${spans[i].name}" overlap in the archive: refused as a zip bomb`);
    }
  }
}

/** Writes the checked entries; on any failure removes the files it wrote. */
async function extract(zip: yauzl.ZipFile, plan: Planned[]): Promise<Extracted> {
  const written: string[] = [];
  const files: string[] = [];
  let totalBytes = 0;
  try {
    for (const { entry, name, target, isDir } of plan) {
      if (isDir) {
        await mkdir(target, { recursive: true });
        continue;
      }
      await mkdir(dirname(target), { recursive: true });
      const stream = await zip.openReadStreamPromise(entry);
      written.push(target);
      await pipeline(stream, checkedBytes(name, entry), createWriteStream(target, { flags: 'wx' }));
      files.push(name);
      totalBytes += entry.uncompressedSize;
    }
  } catch (err) {
    await Promise.all(written.map((path) => rm(path, { force: true })));
    throw err;
  }
  return { files, totalBytes };
}

/**
 * Counts what is actually inflated (declared sizes can lie; yauzl checks them, this is the backstop)
 * and checks the CRC-32 at the end, which yauzl does not.
 */
function checkedBytes(name: string, entry: yauzl.Entry): Transform {
  let inflated = 0;
  let crc = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      inflated += chunk.length;
      if (inflated > entry.uncompressedSize) return cb(new ArchiveRefused(`zip entry "${name}" inflates past its declared size`));
      crc = crc32(chunk, crc);
      cb(null, chunk);
    },
    flush(cb) {
      if (crc !== entry.crc32) {
        const hex = (n: number) => n.toString(16).padStart(8, '0');
        return cb(new ArchiveRefused(`zip entry "${name}" is corrupt: its CRC-32 is ${hex(crc)}, the archive says ${hex(entry.crc32)}`));
      }
      cb();
    },
  });
}
