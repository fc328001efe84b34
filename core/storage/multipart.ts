// Rules shared by every backend's multipart uploads, so that each one refuses the same requests with
// the same MultipartError messages before it touches any stored bytes.
import type { UploadedPart } from './storage.ts';
import { MultipartError } from './storage.ts';

/** S3's minimum size of every part but the last. */
export const DEFAULT_MIN_PART_BYTES = 5 * 1024 * 1024;
/** S3's maximum size of one part. */
export const MAX_PART_BYTES = 5 * 1024 ** 3;
export const MAX_PART_NUMBER = 10000;

/** A part's size as a part URL binds it: 0 (an empty file's only part) up to S3's 5 GiB. */
export function isValidPartBytes(bytes: unknown): bytes is number {
  return Number.isSafeInteger(bytes) && (bytes as number) >= 0 && (bytes as number) <= MAX_PART_BYTES;
}

/** The size of every part but the last, fixed when an upload starts: 1 byte to 5 GiB. */
export function assertValidUploadPartBytes(partBytes: unknown): asserts partBytes is number {
  if (!isValidPartBytes(partBytes) || partBytes === 0) {
    throw new RangeError(`part size must be an integer in 1..5 GiB, got ${String(partBytes)}`);
  }
}

export function isValidPartNumber(partNumber: unknown): partNumber is number {
  return Number.isInteger(partNumber) && (partNumber as number) >= 1 && (partNumber as number) <= MAX_PART_NUMBER;
}

/** Quotes and case differ between servers and clients; the text inside is what counts. */
export function normalizeEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^"(.*)"$/, '$1')
    .toLowerCase();
}

/**
 * Checks a completion request against the parts actually uploaded; returns those parts in order.
 * Throws MultipartError naming the first offending part.
 */
export function checkCompletion(requested: unknown, uploaded: readonly UploadedPart[], minPartBytes: number): UploadedPart[] {
  const listed = listedParts(requested);
  const byNumber = new Map(uploaded.map((part) => [part.partNumber, part]));
  const parts: UploadedPart[] = [];
  for (const [index, part] of listed.entries()) {
    const stored = byNumber.get(part.partNumber);
    if (stored === undefined) throw new MultipartError(`part ${part.partNumber} is missing`);
    if (normalizeEtag(part.etag) !== normalizeEtag(stored.etag)) {
      throw new MultipartError(`ETag of part ${part.partNumber} does not match the uploaded part`);
    }
    if (index < listed.length - 1 && stored.size < minPartBytes) {
      throw new MultipartError(
        `part ${part.partNumber} is ${stored.size} bytes; every part but the last must be at least ${minPartBytes} bytes`,
      );
    }
    parts.push(stored);
  }
  return parts;
}

/** The client's list of parts, from its JSON: valid numbers and ETags, strictly increasing from 1. */
function listedParts(requested: unknown): { partNumber: number; etag: string }[] {
  if (!Array.isArray(requested) || requested.length === 0) throw new MultipartError('at least one part must be listed');
  if (requested.length > MAX_PART_NUMBER) throw new MultipartError(`at most ${MAX_PART_NUMBER} parts can be listed`);
  const parts: { partNumber: number; etag: string }[] = [];
  for (const item of requested as unknown[]) {
    const { partNumber, etag } = (typeof item === 'object' && item !== null ? item : {}) as { partNumber?: unknown; etag?: unknown };
    if (!isValidPartNumber(partNumber)) throw new MultipartError(`invalid part number ${JSON.stringify(partNumber)}`);
    if (typeof etag !== 'string') throw new MultipartError(`part ${partNumber} has no ETag`);
    const previous = parts.at(-1);
    if (previous !== undefined && partNumber === previous.partNumber) throw new MultipartError(`part ${partNumber} is listed twice`);
    if (previous !== undefined && partNumber < previous.partNumber) {
      throw new MultipartError(`parts must be listed in order: part ${partNumber} after part ${previous.partNumber}`);
    }
    parts.push({ partNumber, etag });
  }
  // Strictly increasing from here on, so the first gap is where the number runs ahead of the index.
  for (const [index, part] of parts.entries()) {
    if (part.partNumber !== index + 1) throw new MultipartError(`part ${index + 1} is missing`);
  }
  return parts;
}
