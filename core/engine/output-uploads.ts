// The service's side of outputs uploaded in parts (core/jobs/output-parts.ts): the plan a runner asks
// for (an upload and its part URLs), the upload's completion from the parts its result lists, and the
// abort of what a step leaves unfinished. Uploads are found again by their output's key, not recorded:
// a runner that died, or a plan answered while its step was ending, leaves nothing the listing misses.
import type { CommandRow } from '../commands/commands-repo.ts';
import { outputPartBytes, partRanges, type OutputMultipartSettings, type OutputUploadPlan } from '../jobs/output-parts.ts';
import type { OutputResult } from '../jobs/step-spec.ts';
import type { Storage } from '../storage/storage.ts';
import { outputKey, stepOutputs } from './step-spec-builder.ts';

/** Starts the multipart upload of an output of `size` bytes; every part URL binds its part's exact size. */
export async function planOutputUpload(
  storage: Storage,
  key: string,
  o: { size: number; contentType: string; minPartBytes: number; ttlSeconds: number },
): Promise<OutputUploadPlan> {
  const partBytes = outputPartBytes(o.size, o.minPartBytes);
  const uploadId = await storage.createMultipartUpload(key, o.contentType, partBytes);
  try {
    const partUrls = await Promise.all(
      partRanges(o.size, partBytes).map((part) => storage.presignUploadPart(key, uploadId, part.partNumber, o.ttlSeconds, part.bytes)),
    );
    return { uploadId, partBytes, partUrls };
  } catch (err) {
    await storage.abortMultipartUpload(key, uploadId);
    throw err;
  }
}

type Command = Pick<CommandRow, 'isPrivate' | 'accountId' | 'outputs'>;

/**
 * Completes the uploads a successful result lists (result-bounds.ts checked their shape), each holding
 * exactly the bytes the result reports; what went wrong, or null. Other uploads of those keys (a plan
 * asked for twice) are aborted.
 */
export async function completeOutputUploads(storage: Storage, command: Command, outputs: OutputResult[]): Promise<string | null> {
  for (const output of outputs) {
    if (output.upload === undefined) continue;
    const declared = command.outputs.find((d) => d.alias === output.alias);
    if (!declared) return `${output.alias} is not an output of the command`;
    const key = outputKey(command, declared);
    const expected = output.compressedSize ?? output.size;
    let stored: { size: number };
    try {
      stored = await storage.completeMultipartUpload(key, output.upload.uploadId, output.upload.parts);
    } catch (err) {
      return `could not complete the upload of ${output.alias}: ${(err as Error).message}`;
    }
    if (stored.size !== expected) {
      await storage.delete(key);
      return `the upload of ${output.alias} holds ${stored.size} bytes where the runner reported ${expected}`;
    }
    await abortUploadsOf(storage, key);
  }
  return null;
}

/**
 * Where outputs may go up in parts (`multipart` set): aborts every unfinished upload of the step's
 * outputs (a failed, lost or stopped step), so no part stays. A failure is told to `onError`, never thrown.
 */
export async function abortOutputUploads(
  storage: Storage,
  multipart: OutputMultipartSettings | undefined,
  command: Command & Pick<CommandRow, 'steps'>,
  step: number,
  onError: (err: Error) => void,
): Promise<void> {
  if (multipart === undefined) return;
  try {
    for (const output of stepOutputs(command, step)) await abortUploadsOf(storage, outputKey(command, output));
  } catch (err) {
    onError(err as Error);
  }
}

async function abortUploadsOf(storage: Storage, key: string): Promise<void> {
  for (const uploadId of await storage.unfinishedUploads(key)) await storage.abortMultipartUpload(key, uploadId);
}
