// Large outputs go to storage as multipart uploads, their parts sent in parallel, so that a runner pod's
// upload runs at the pod's network speed rather than at one connection's. The runner asks the service
// for a plan once it knows the output's size (api/routes/job-uploads.ts): an upload id and one
// presigned URL per part, each binding its part's exact size. Asking costs a round trip, but only for
// outputs that are large. A plan in the step spec would need an upload created ahead for every output
// (most are small: two storage requests per output and step for nothing), part URLs for the largest
// output a step may write (20 GiB) in every spec, whose parts are then either many or too large to run
// in parallel for a 256 MiB output, and a last part whose size no URL could bind. The result lists
// the parts' ETags and the reconciler completes the upload (core/engine/output-uploads.ts).
import { choosePartSize, partCount } from '../files/part-size.ts';
import { MAX_PART_BYTES } from '../storage/multipart.ts';

/** Outputs at least this large go up in parts (cluster mode, and embedded mode with S3); smaller ones keep one PUT. */
export const MULTIPART_OUTPUT_MIN_BYTES = 64 * 1024 * 1024;
/** Smallest part of an output's upload: 4 at a time keep a pod's link busy without much memory in flight. */
export const OUTPUT_PART_MIN_BYTES = 16 * 1024 * 1024;
/** Most parts of one output: bounds the plan's answer and the result (each part's ETag is in it, and a result is at most 64 KiB). */
export const MAX_OUTPUT_PARTS = 32;
/** Parts a runner sends at once. */
export const OUTPUT_PART_CONCURRENCY = 4;
/** The largest output that can go up in parts: MAX_OUTPUT_PARTS parts of S3's largest. */
export const MAX_MULTIPART_OUTPUT_BYTES = MAX_OUTPUT_PARTS * MAX_PART_BYTES;

/** What the runner gets to upload one output in parts. */
export interface OutputUploadPlan {
  uploadId: string;
  /** Size of every part but the last. */
  partBytes: number;
  /** URL of part n at index n-1; each accepts one PUT of exactly that part's bytes. */
  partUrls: string[];
}

/** What the result says of an output uploaded in parts: the reconciler completes the upload with it. */
export interface ReportedUpload {
  uploadId: string;
  parts: { partNumber: number; etag: string }[];
}

export interface PartRange {
  partNumber: number;
  /** First byte of the part in the file. */
  start: number;
  bytes: number;
}

/** Size of every part but the last for an output of `size` bytes: at least minPartBytes, at most MAX_OUTPUT_PARTS parts. */
export function outputPartBytes(size: number, minPartBytes = OUTPUT_PART_MIN_BYTES): number {
  const mib = 1024 * 1024;
  return choosePartSize(size, Math.max(minPartBytes, Math.ceil(size / MAX_OUTPUT_PARTS / mib) * mib));
}

/** The parts of a file of `size` bytes (> 0): every part partBytes but the last, which holds the rest. */
export function partRanges(size: number, partBytes: number): PartRange[] {
  if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`invalid size ${size}`);
  if (!Number.isSafeInteger(partBytes) || partBytes < 1) throw new RangeError(`invalid part size ${partBytes}`);
  const ranges: PartRange[] = [];
  for (let n = 0; n < partCount(size, partBytes); n++) {
    const start = n * partBytes;
    ranges.push({ partNumber: n + 1, start, bytes: Math.min(partBytes, size - start) });
  }
  return ranges;
}

/** Visible ASCII but the quote, optionally quoted: what S3 (hex MD5, "-n" suffixes) and local storage (CRC-size) answer. */
const ETAG_PATTERN = /^"?[!#-~]{1,128}"?$/;
/** S3 upload ids in practice (AWS, MinIO, Ceph, versitygw), and local storage's base64url ones. */
export const OUTPUT_UPLOAD_ID_PATTERN = /^[A-Za-z0-9._~-]{1,1024}$/;

/**
 * Why the parts a result reports cannot be the whole output of `size` bytes cut into parts as the
 * service planned (outputPartBytes with the same minimum); null when they can. Storage checks each ETag
 * against the part it holds when the upload is completed.
 */
export function reportedUploadProblem(upload: ReportedUpload, size: number, minPartBytes = OUTPUT_PART_MIN_BYTES): string | null {
  if (!OUTPUT_UPLOAD_ID_PATTERN.test(upload.uploadId)) return 'upload.uploadId: not an upload id';
  if (size < 1 || size > MAX_MULTIPART_OUTPUT_BYTES) return `upload: ${size} bytes cannot have been uploaded in parts`;
  const expected = partRanges(size, outputPartBytes(size, minPartBytes)).length;
  if (upload.parts.length !== expected) return `upload.parts: ${upload.parts.length} parts listed, ${size} bytes take ${expected}`;
  for (const [i, part] of upload.parts.entries()) {
    if (part.partNumber !== i + 1) return `upload.parts.${i}.partNumber: ${part.partNumber} where ${i + 1} belongs`;
    if (!ETAG_PATTERN.test(part.etag)) return `upload.parts.${i}.etag: not an ETag`;
  }
  return null;
}

/** Where outputs go up in parts (cluster mode): from what size, and the smallest part. */
export interface OutputMultipartSettings {
  minBytes: number;
  minPartBytes: number;
  /**
   * Embedded mode: where runners, which have no report URL, ask for plans (the service's job-uploads
   * route), and the secret of the Job tokens each step's spec then carries.
   */
  plans?: { url: string; tokenSecret: string };
}

export const DEFAULT_OUTPUT_MULTIPART: OutputMultipartSettings = {
  minBytes: MULTIPART_OUTPUT_MIN_BYTES,
  minPartBytes: OUTPUT_PART_MIN_BYTES,
};
