// A request body written into a file at a position, for uploads (and a download's parts,
// core/net/ranged-download.ts). Chunks arrive from the socket in pieces of a few KiB to 64 KiB;
// writing each one and waiting for it before reading the next held the body back by one thread-pool
// round trip per chunk. Here reading goes on while a write is in flight, and what arrived meanwhile
// goes in the next write, as one writev. (A Transform and a write stream in a pipeline cost uploads a
// tenth of their throughput, hence a plain loop over the body.) Leaving the loop early drops the rest
// of the body (read, not written).
import type { FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { ObjectSizeMismatch } from './storage.ts';

/** Bytes that may wait in memory behind a write in flight; beyond this, reading waits for the disk. */
export const WAITING_BYTES_LIMIT = 4 * 1024 * 1024;

/**
 * Writes exactly `size` bytes of `body` at `position`; `onChunk` sees every chunk, in order. Returns
 * once all of it is written; on any failure, once no write is in flight any more (so the caller may
 * close the file).
 */
export async function writeBodyAt(
  file: FileHandle,
  position: number,
  body: Readable,
  size: number,
  onChunk?: (chunk: Buffer) => void,
): Promise<void> {
  const writes = new WriteQueue(file, position);
  let seen = 0;
  try {
    for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      seen += chunk.length;
      if (seen > size) throw new ObjectSizeMismatch(size, `more than ${size}`);
      onChunk?.(chunk);
      await writes.add(chunk);
    }
    if (seen !== size) throw new ObjectSizeMismatch(size, String(seen));
    await writes.drain();
  } finally {
    await writes.settle();
    // A write failed (e.g. ENOSPC): the rest of the body is read and dropped, not cut off, so that a
    // request's sender gets the answer (a reset connection would lose it). Bounded by its declared size.
    if (!body.readableEnded && !body.destroyed) body.resume();
  }
}

/**
 * Writes the first `size` bytes of `body` at `position`, the same way, and reads no further: the
 * caller closes the body. ObjectSizeMismatch when the body ends before.
 */
export async function writeStartAt(file: FileHandle, position: number, body: Readable, size: number): Promise<void> {
  const writes = new WriteQueue(file, position);
  let seen = 0;
  try {
    for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      const take = Math.min(chunk.length, size - seen);
      seen += take;
      await writes.add(take < chunk.length ? chunk.subarray(0, take) : chunk);
      if (seen === size) break;
    }
    if (seen !== size) throw new ObjectSizeMismatch(size, String(seen));
    await writes.drain();
  } finally {
    await writes.settle();
  }
}

/** Chunks written in order from a position; at most one write in flight. */
class WriteQueue {
  private readonly file: FileHandle;
  private next: number;
  private waiting: Buffer[] = [];
  private waitingBytes = 0;
  private inFlight: Promise<void> | null = null;
  private failure: { error: unknown } | null = null;

  constructor(file: FileHandle, position: number) {
    this.file = file;
    this.next = position;
  }

  /** Queues a chunk; waits only while too much is waiting behind the write in flight. */
  async add(chunk: Buffer): Promise<void> {
    this.throwIfFailed();
    this.waiting.push(chunk);
    this.waitingBytes += chunk.length;
    if (this.inFlight === null) this.startWrite();
    while (this.waitingBytes >= WAITING_BYTES_LIMIT && this.inFlight !== null) await this.inFlight;
    this.throwIfFailed();
  }

  /** Waits until everything queued is written; throws the first write's error. */
  async drain(): Promise<void> {
    while (this.inFlight !== null) await this.inFlight;
    this.throwIfFailed();
  }

  /** Waits for the write in flight and starts none after it (failure path); never throws. */
  async settle(): Promise<void> {
    this.waiting = [];
    this.waitingBytes = 0;
    while (this.inFlight !== null) await this.inFlight;
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }

  private startWrite(): void {
    const buffers = this.waiting;
    const at = this.next;
    this.next += this.waitingBytes;
    this.waiting = [];
    this.waitingBytes = 0;
    this.inFlight = writeFully(this.file, buffers, at).then(
      () => {
        this.inFlight = null;
        if (this.waiting.length > 0) this.startWrite();
      },
      (error: unknown) => {
        this.failure ??= { error };
        this.inFlight = null;
      },
    );
  }
}

/** writev until every byte is written (a write may take fewer bytes than given). */
async function writeFully(file: FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    let { bytesWritten } = await file.writev(rest, position);
    position += bytesWritten;
    const left: Buffer[] = [];
    for (const buffer of rest) {
      if (bytesWritten >= buffer.length) bytesWritten -= buffer.length;
      else {
        left.push(bytesWritten > 0 ? buffer.subarray(bytesWritten) : buffer);
        bytesWritten = 0;
      }
    }
    rest = left;
  }
}
