// Sends a byte range of an open file to a writable (node's HTTP response) at disk speed. Node has no
// sendfile(2); the next best is few, large reads into buffers that are reused: two of 1 MiB, one
// being read into while the other is written. Measured on a 1 GiB download (e2e/bench/
// stored-file-download.ts): fs.createReadStream's 64 KiB chunks through a web stream ran at a fifth
// of a static server's speed; fresh 1 MiB chunks at a third under the service's malloc settings
// (MALLOC_MMAP_THRESHOLD_: every chunk a new mapping, faulted in page by page).
import type { FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import type { ByteRange } from './storage.ts';

export const SEND_CHUNK_BYTES = 1024 * 1024;

/** The destination closed before every byte was written to it (a client that went away). */
export class DestinationClosed extends Error {
  constructor() {
    super('the destination closed before the file was sent');
    this.name = 'DestinationClosed';
  }
}

/**
 * Writes bytes `range.start..range.end` (inclusive) of `file` to `out`, and resolves once all were
 * handed to it (flushed, for a socket); does not end `out` nor close `file`. Rejects when the file is
 * shorter than the range, on a read or write error, or with DestinationClosed when `out` closes first.
 */
export async function sendFileRange(file: FileHandle, range: ByteRange, out: Writable): Promise<void> {
  const chunkBytes = Math.min(SEND_CHUNK_BYTES, range.end - range.start + 1);
  const buffers = [Buffer.allocUnsafeSlow(chunkBytes), Buffer.allocUnsafeSlow(chunkBytes)];
  // A buffer may be read into again once its last write was flushed.
  const flushed: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
  const closed = closedEarly(out);
  try {
    for (let position = range.start, i = 0; position <= range.end; i ^= 1) {
      await Promise.race([flushed[i], closed.promise]);
      const wanted = Math.min(chunkBytes, range.end - position + 1);
      const { bytesRead } = await file.read(buffers[i], 0, wanted, position);
      if (bytesRead === 0) throw new Error(`the file ends at byte ${position}, before the range's end ${range.end}`);
      flushed[i] = write(out, buffers[i].subarray(0, bytesRead));
      position += bytesRead;
    }
    await Promise.race([Promise.all(flushed), closed.promise]);
  } finally {
    closed.stopWatching();
  }
}

/** out.write() as a promise of its callback; never an unhandled rejection if nobody awaits it. */
function write(out: Writable, chunk: Buffer): Promise<void> {
  const done = new Promise<void>((resolve, reject) => out.write(chunk, (err) => (err ? reject(err) : resolve())));
  done.catch(() => {});
  return done;
}

/** A promise that rejects when `out` closes or fails, until stopWatching(). */
function closedEarly(out: Writable): { promise: Promise<never>; stopWatching: () => void } {
  let fail: (err: Error) => void = () => {};
  const promise = new Promise<never>((_resolve, reject) => (fail = reject));
  promise.catch(() => {});
  const onClose = () => fail(new DestinationClosed());
  out.once('close', onClose);
  out.once('error', fail);
  if (out.destroyed) onClose();
  return {
    promise,
    stopWatching: () => {
      out.off('close', onClose);
      out.off('error', fail);
    },
  };
}
