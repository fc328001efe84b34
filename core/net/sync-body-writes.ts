// A download's body written into its file chunk by chunk, each before its 'data' event returns: no
// write stream, no thread-pool round trip and no queue of chunks between the socket and the file.
// For a 277 MB input on loopback this took a third less CPU and about 0.1 s less than a write stream.
//
// Only for a process whose event loop may wait for the disk: the runner, which does one step. A write
// into the page cache takes microseconds, but a disk far behind can hold one for longer. The service
// keeps its writes off the event loop (positioned-writes.ts, write streams).
import { writeSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream';

export interface SyncBodyWrite {
  /** The file (a descriptor open for writing) and where the body's first byte goes. */
  fd: number;
  position: number;
  /** The most bytes taken; what happens beyond it is `atLimit`. */
  limit: number;
  /** 'stop': resolve once `limit` bytes are written, and drop what follows until the caller closes the body; 'fail': reject with tooMuch(). */
  atLimit: 'stop' | 'fail';
  tooMuch?: () => Error;
  signal?: AbortSignal;
}

/**
 * Writes `body` into the file as it arrives; resolves with the bytes written when it ends (or, with
 * 'stop', when `limit` bytes are written). Rejects with the body's error, the signal's reason, a write
 * error (the body is then destroyed), or tooMuch().
 */
export function writeBodySync(body: Readable, w: SyncBodyWrite): Promise<number> {
  return new Promise((resolve, reject) => {
    let written = 0;
    let settled = false;
    const settle = (error: Error | null) => {
      if (settled) return;
      settled = true;
      w.signal?.removeEventListener('abort', onAbort);
      if (error) reject(error);
      else resolve(written);
    };
    const onAbort = () => body.destroy(w.signal!.reason instanceof Error ? w.signal!.reason : new Error('aborted'));
    body.on('data', (chunk: Buffer) => {
      if (settled) return; // stopped at the limit: the rest is dropped (read, not kept)
      let take = chunk.length;
      if (written + take > w.limit) {
        if (w.atLimit === 'fail') return body.destroy(w.tooMuch?.() ?? new Error(`the body is more than ${w.limit} bytes`));
        take = w.limit - written;
      }
      try {
        for (let done = 0; done < take;) done += writeSync(w.fd, chunk, done, take - done, w.position + written + done);
      } catch (error) {
        return body.destroy(error as Error);
      }
      written += take;
      if (w.atLimit === 'stop' && written === w.limit) settle(null);
    });
    finished(body, (error) => settle(error ?? null));
    if (w.signal?.aborted) onAbort();
    else w.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
