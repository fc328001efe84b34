// A large output's multipart upload (core/jobs/output-parts.ts): its parts are read straight from the
// file by range and PUT to their presigned URLs, OUTPUT_PART_CONCURRENCY at a time, each with the
// retries of a whole-file PUT (put-file.ts). The first part that fails for good stops the others; the
// service aborts the upload when the step fails, so no part is left in storage.
import { createReadStream } from 'node:fs';
import { OUTPUT_PART_CONCURRENCY, partRanges, type OutputUploadPlan, type ReportedUpload } from '../core/jobs/output-parts.ts';
import { send, UPLOAD_RETRY_DELAYS_MS, withRetries } from './put-file.ts';

export interface PutPartsOptions {
  signal: AbortSignal;
  /** Parts sent at once; default OUTPUT_PART_CONCURRENCY. */
  concurrency?: number;
  /** Waits between tries of one part; default UPLOAD_RETRY_DELAYS_MS. */
  retryDelaysMs?: readonly number[];
}

/** Read-ahead of each part's file stream: fewer, larger reads than the 64 KiB default. */
const READ_BUFFER_BYTES = 1024 * 1024;

/** Uploads the file of `size` bytes as the plan's parts; resolves with what the result reports of it. */
export async function putParts(plan: OutputUploadPlan, path: string, size: number, o: PutPartsOptions): Promise<ReportedUpload> {
  const ranges = partRanges(size, plan.partBytes);
  if (ranges.length !== plan.partUrls.length) {
    throw new Error(`the upload plan has ${plan.partUrls.length} part URLs for ${ranges.length} parts`);
  }
  // Linked to the step's signal, and aborted by the first part that fails for good.
  const stop = new AbortController();
  const onAbort = () => stop.abort(o.signal.reason);
  o.signal.addEventListener('abort', onAbort, { once: true });
  const etags: string[] = new Array<string>(ranges.length);
  let next = 0;
  const worker = async () => {
    while (next < ranges.length && !stop.signal.aborted) {
      const range = ranges[next++];
      const url = plan.partUrls[range.partNumber - 1];
      const etag = await withRetries(
        () =>
          send(
            url,
            createReadStream(path, { start: range.start, end: range.start + range.bytes - 1, highWaterMark: READ_BUFFER_BYTES }),
            { 'content-length': String(range.bytes) },
            stop.signal,
          ),
        stop.signal,
        o.retryDelaysMs ?? UPLOAD_RETRY_DELAYS_MS,
      );
      if (etag === null) throw new Error(`storage answered part ${range.partNumber} without an ETag`);
      etags[range.partNumber - 1] = etag;
    }
  };
  const workers = Array.from({ length: Math.min(o.concurrency ?? OUTPUT_PART_CONCURRENCY, ranges.length) }, () =>
    worker().catch((err: unknown) => {
      stop.abort(err);
      throw err;
    }),
  );
  try {
    await Promise.allSettled(workers);
    // Every failure aborts `stop`: its reason is the first one (or the step's cancel), the others being aborts it caused.
    if (stop.signal.aborted) throw stop.signal.reason;
    return { uploadId: plan.uploadId, parts: etags.map((etag, i) => ({ partNumber: i + 1, etag })) };
  } finally {
    o.signal.removeEventListener('abort', onAbort);
  }
}
