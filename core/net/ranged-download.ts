// A large file from a host that serves byte ranges comes down over several connections at once: hosts
// and object stores limit what one connection gets (S3 and CDNs advise ranged GETs in parallel), so a
// single connection leaves most of the network unused.
//
// The first GET (already answered, its head read) brings the first part and is then closed; the other
// parts are ranged GETs of the same URL, each through the same address checks (guarded-request.ts),
// with If-Range so a file that changed in between is never stitched from two versions. Every part
// must come back exactly as asked (206, the same Content-Range, the same total); anything else and the
// caller fetches the file whole, as it would have without ranges.
import type { IncomingMessage } from 'node:http';
import { open, type FileHandle } from 'node:fs/promises';

/** The answer was not the exact range asked for: fetch the file whole instead. */
export class RangesRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RangesRefused';
  }
}

export interface RangePlan {
  /** The whole file's size (the first answer's Content-Length). */
  size: number;
  /** Sent as If-Range: the first answer's strong ETag, else its Last-Modified. */
  validator: string;
  /** [first byte, last byte] of each part, in order; the first part is the first answer's. */
  parts: [number, number][];
}

/**
 * How to fetch the file the first answer (a 200) describes in ranges, or null to read it whole: the
 * host must say it takes byte ranges, give the size and a validator, and the file must be at least
 * `minBytes` (each part then at least minBytes / parts).
 */
export function planRanges(response: IncomingMessage, o: { parts: number; minBytes: number }): RangePlan | null {
  const h = response.headers;
  const size = Number(h['content-length']);
  if (response.statusCode !== 200 || o.parts < 2 || !Number.isSafeInteger(size) || size < o.minBytes || size < o.parts) return null;
  if (!/(^|,)\s*bytes\s*(,|$)/i.test(h['accept-ranges'] ?? '')) return null;
  if (h['content-encoding'] !== undefined && h['content-encoding'] !== 'identity') return null;
  // A weak ETag may not be used with If-Range (RFC 9110, 13.1.5).
  const etag = h.etag && !h.etag.startsWith('W/') ? h.etag : undefined;
  const validator = etag ?? h['last-modified'];
  if (!validator) return null;
  const partSize = Math.ceil(size / o.parts);
  const parts: [number, number][] = [];
  for (let first = 0; first < size; first += partSize) parts.push([first, Math.min(size, first + partSize) - 1]);
  return { size, validator, parts };
}

/** The answer to a ranged GET is exactly the range asked for, or RangesRefused says what it was instead. */
export function checkRangeAnswer(response: IncomingMessage, [first, last]: [number, number], size: number): void {
  const expected = `bytes ${first}-${last}/${size}`;
  if (response.statusCode !== 206) throw new RangesRefused(`a range request was answered HTTP ${response.statusCode}, not 206`);
  const range = response.headers['content-range'];
  if (range !== expected) throw new RangesRefused(`a range request for ${expected} was answered with Content-Range ${range ?? '(none)'}`);
  const length = response.headers['content-length'];
  if (length !== undefined && Number(length) !== last - first + 1) {
    throw new RangesRefused(`a range request for ${expected} was answered with Content-Length ${length}`);
  }
}

/** Bytes gathered before each write: few calls into the file system for large media. */
const WRITE_BYTES = 1 << 20;

/**
 * Writes `length` bytes of `body` at `position` in `file`. `exact`: the body must end right there (a
 * ranged answer); otherwise (the first, whole answer) reading stops after them and the body is closed.
 */
export async function writePart(body: IncomingMessage, file: FileHandle, position: number, length: number, exact: boolean): Promise<void> {
  let written = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    let buffers = pending;
    const bytes = pendingBytes;
    pending = [];
    pendingBytes = 0;
    // One call for the gathered chunks, without copying them into one buffer first.
    for (let done = 0; done < bytes;) {
      const { bytesWritten } = await file.writev(buffers, position + written + done);
      done += bytesWritten;
      buffers = afterBytes(buffers, bytesWritten);
    }
    written += bytes;
  };
  for await (const chunk of body as AsyncIterable<Buffer>) {
    const room = length - written - pendingBytes;
    if (chunk.length > room && exact) throw new RangesRefused(`a range answer ran past its ${length} bytes`);
    pending.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    pendingBytes += Math.min(chunk.length, room);
    if (pendingBytes >= WRITE_BYTES || written + pendingBytes === length) await flush();
    if (written === length) break;
  }
  if (pendingBytes > 0) await flush();
  body.destroy(); // the whole answer's rest is another part's
  if (written !== length) throw new RangesRefused(`a part ended after ${written} of its ${length} bytes`);
}

/** What is left of `buffers` after their first `bytes` bytes (a short write). */
export function afterBytes(buffers: Buffer[], bytes: number): Buffer[] {
  let skip = bytes;
  const left: Buffer[] = [];
  for (const buffer of buffers) {
    if (skip >= buffer.length) skip -= buffer.length;
    else {
      left.push(skip > 0 ? buffer.subarray(skip) : buffer);
      skip = 0;
    }
  }
  return left;
}

/** Creates the file the parts are written into ('wx': never through an existing file or link). */
export function createPartsFile(path: string): Promise<FileHandle> {
  return open(path, 'wx');
}
