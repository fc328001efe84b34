// A large file from a host that serves byte ranges comes down over several connections at once: hosts
// and object stores limit what one connection gets (S3 and CDNs advise ranged GETs in parallel), so a
// single connection leaves most of the network unused.
//
// The first GET (already answered, its head read) brings the first part and is then closed; the other
// parts are ranged GETs of the same URL, each through the same address checks (guarded-request.ts),
// with If-Range, and each answer's own ETag (or Last-Modified) checked, so a file that changed in
// between is never stitched from two versions. Every part must come back exactly as asked (206, the
// same Content-Range, the same total); anything else and the caller fetches the file whole, as it
// would have without ranges.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { open, type FileHandle } from 'node:fs/promises';
import { writeBodyAt, writeStartAt } from '../storage/positioned-writes.ts';
import { ObjectSizeMismatch } from '../storage/storage.ts';
import { writeBodySync } from './sync-body-writes.ts';

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
  /** Sent as If-Range, and required of every part's answer: the first answer's strong ETag, else its Last-Modified. */
  validator: string;
  /** Which of the two it is. */
  validatorHeader: 'etag' | 'last-modified';
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
  const validatorHeader = strongValidator(h);
  if (!validatorHeader) return null;
  const partSize = Math.ceil(size / o.parts);
  const parts: [number, number][] = [];
  for (let first = 0; first < size; first += partSize) parts.push([first, Math.min(size, first + partSize) - 1]);
  return { size, validator: h[validatorHeader]!, validatorHeader, parts };
}

/**
 * What If-Range may carry (RFC 9110, 13.1.5): a strong ETag; else a Last-Modified at least a second
 * older than the answer's Date (a file rewritten within the same second would keep the same date).
 */
function strongValidator(h: IncomingHttpHeaders): 'etag' | 'last-modified' | null {
  if (h.etag && !h.etag.startsWith('W/')) return 'etag';
  const modified = Date.parse(h['last-modified'] ?? '');
  const answered = Date.parse(h.date ?? '');
  return answered - modified >= 1000 ? 'last-modified' : null;
}

/**
 * The answer to a ranged GET is exactly the range asked for, of the version the plan saw, or
 * RangesRefused says what it was instead. The version is checked on the answer itself too: a host may
 * ignore If-Range and answer the range of a newer file of the same size.
 */
export function checkRangeAnswer(response: IncomingMessage, [first, last]: [number, number], plan: RangePlan): void {
  const { size, validator, validatorHeader } = plan;
  const expected = `bytes ${first}-${last}/${size}`;
  if (response.statusCode !== 206) throw new RangesRefused(`a range request was answered HTTP ${response.statusCode}, not 206`);
  const version = response.headers[validatorHeader];
  if (version !== validator) throw new RangesRefused(`a range request was answered for version ${version ?? '(none)'}, not ${validator}`);
  const range = response.headers['content-range'];
  if (range !== expected) throw new RangesRefused(`a range request for ${expected} was answered with Content-Range ${range ?? '(none)'}`);
  const length = response.headers['content-length'];
  if (length !== undefined && Number(length) !== last - first + 1) {
    throw new RangesRefused(`a range request for ${expected} was answered with Content-Length ${length}`);
  }
}

/**
 * Writes `length` bytes of `body` at `position` in `file`, then closes the body. `exact`: the body
 * must end right there (a ranged answer); otherwise (the first, whole answer) reading stops there.
 * `sync`: written as it arrives (sync-body-writes.ts).
 */
export async function writePart(
  body: IncomingMessage,
  file: FileHandle,
  position: number,
  length: number,
  exact: boolean,
  sync = false,
): Promise<void> {
  try {
    if (sync) {
      const tooMuch = () => new ObjectSizeMismatch(length, `more than ${length}`);
      const written = await writeBodySync(body, {
        fd: file.fd,
        position,
        limit: length,
        atLimit: exact ? 'fail' : 'stop',
        tooMuch,
      });
      if (written !== length) throw new ObjectSizeMismatch(length, String(written));
    } else if (exact) await writeBodyAt(file, position, body, length);
    else await writeStartAt(file, position, body, length);
  } catch (error) {
    if (error instanceof ObjectSizeMismatch) throw new RangesRefused(`a part of ${length} bytes came with ${error.message}`);
    throw error;
  } finally {
    body.destroy(); // the whole answer's rest is another part's
  }
}

/** Creates the file the parts are written into ('wx': never through an existing file or link). */
export function createPartsFile(path: string): Promise<FileHandle> {
  return open(path, 'wx');
}
