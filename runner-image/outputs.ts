// UPLOADING: every declared output is checked, probed and PUT to its presigned URL. Playlists and
// OUTPUT_FOLDER travel as one zip each (their file names are only known once ffmpeg has run).
import { lstat, mkdir, readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { ErrorStatus } from '../core/commands/error-status.ts';
import type { OutputResult, StepOutput } from '../core/jobs/step-spec.ts';
import { zipFiles } from '../core/archive/zip-files.ts';
import { contentTypeForFileName } from '../core/media/mime.ts';
import type { FileProber } from '../core/media/file-prober.ts';
import { unknownMedia } from '../core/media/unknown-media.ts';
import { INPUT_DIR, OUTPUT_DIR } from './inputs.ts';
import { StepFailure } from './step-failure.ts';
import { putFile, StorageAnswer } from './put-file.ts';
import { putParts } from './put-parts.ts';
import { writeBack } from './write-behind.ts';
import type { OutputUploadPlan, ReportedUpload } from '../core/jobs/output-parts.ts';
import { outOfSpaceMessage } from '../core/storage/out-of-space.ts';

/** Files under `base` (relative paths), with their size and modification time. */
export async function listFiles(base: string, skipTopLevel: string[] = []): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const walk = async (folder: string) => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      const rel = relative(base, path);
      if (skipTopLevel.includes(rel.split('/')[0])) continue;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) {
        const s = await stat(path);
        found.set(rel, `${s.size}:${s.mtimeMs}`);
      }
    }
  };
  await walk(base);
  return found;
}

export interface CollectOptions {
  signal: AbortSignal;
  /** Confined ffprobe, as the step's uid. */
  prober: FileProber;
  /** Most files one playlist or OUTPUT_FOLDER output may hold. */
  maxFiles: number;
  /** Embedded mode: the local storage's hand-off folder (put-file.ts). */
  handoffDir?: string;
  /** Outputs of at least this many bytes go up in parts (the spec's multipartMinBytes), when planUpload is given. */
  multipartMinBytes?: number;
  /** Cluster mode: asks the API for an output's multipart upload plan (upload-plans.ts). */
  planUpload?: PlanUpload;
}

/** Asks for the plan of an output's multipart upload. */
export type PlanUpload = (request: { alias: string; size: number; contentType: string }, signal: AbortSignal) => Promise<OutputUploadPlan>;

export async function collectOutputs(
  outputs: StepOutput[],
  dir: string,
  before: Map<string, string>,
  o: CollectOptions,
): Promise<OutputResult[]> {
  const results: OutputResult[] = [];
  for (const output of outputs) {
    if (output.kind === 'file') results.push(await uploadFile(output, dir, o));
    else if (output.kind === 'playlist') results.push(await uploadPlaylist(output, dir, o));
    else results.push(await uploadFolder(output, dir, before, o));
  }
  return results;
}

async function uploadFile(output: StepOutput, dir: string, o: CollectOptions): Promise<OutputResult> {
  const path = join(dir, OUTPUT_DIR, output.alias, output.fileName);
  const size = await nonEmptySize(path, output);
  // Local storage makes the file durable before it stores it: the disk writes back what is left while ffprobe reads it.
  const flushed = o.handoffDir ? writeBack(path) : null;
  const media = await o.prober.describe(path, output.fileName);
  await flushed;
  const upload = await put(output, path, size, media.mime_type ?? contentTypeForFileName(output.fileName), o);
  return { alias: output.alias, fileName: output.fileName, size, media, ...upload };
}

async function uploadPlaylist(output: StepOutput, dir: string, o: CollectOptions): Promise<OutputResult> {
  const folder = join(dir, OUTPUT_DIR, output.alias);
  await nonEmptySize(join(folder, output.fileName), output);
  const names = [...(await listFiles(folder)).keys()];
  checkFileCount(output, names.length, o.maxFiles);
  const media = await o.prober.describe(join(folder, output.fileName), output.fileName);
  return zipAndPut(output, folder, names, join(dir, `${output.alias}.zip`), media, o);
}

async function uploadFolder(output: StepOutput, dir: string, before: Map<string, string>, o: CollectOptions): Promise<OutputResult> {
  const after = await listFiles(dir, [INPUT_DIR, OUTPUT_DIR]);
  const produced = [...after]
    .filter(([name, stamp]) => before.get(name) !== stamp)
    .map(([name]) => name)
    .sort();
  if (produced.length === 0) {
    throw new StepFailure(
      ErrorStatus.OUTPUT_FILE_NOT_CREATED,
      'ffmpeg finished but wrote no files into the working folder for OUTPUT_FOLDER',
    );
  }
  checkFileCount(output, produced.length, o.maxFiles);
  await mkdir(join(dir, OUTPUT_DIR), { recursive: true });
  return zipAndPut(output, dir, produced, join(dir, OUTPUT_DIR, output.fileName), unknownMedia(output.fileName), o);
}

/** Playlists and folders travel as one zip of `names` (relative to `base`), written at `zipPath`. */
async function zipAndPut(
  output: StepOutput,
  base: string,
  names: string[],
  zipPath: string,
  media: OutputResult['media'],
  o: CollectOptions,
): Promise<OutputResult> {
  const zip = await zipFiles(base, names, zipPath);
  const upload = await put(output, zipPath, zip.size, 'application/zip', o);
  return {
    alias: output.alias,
    fileName: output.fileName,
    size: zip.totalBytes,
    fileCount: names.length,
    compressedSize: zip.size,
    media,
    ...upload,
  };
}

function checkFileCount(output: StepOutput, count: number, maxFiles: number): void {
  if (count > maxFiles) {
    throw new StepFailure(
      ErrorStatus.TOO_MANY_OUTPUT_FILES,
      `${output.alias}: ffmpeg wrote ${count} files, more than the ${maxFiles} one output may hold (use longer segments or fewer frames)`,
    );
  }
}

async function nonEmptySize(path: string, output: StepOutput): Promise<number> {
  // lstat: a link is not an output (the seccomp filter keeps ffmpeg from making one anyway).
  const size = await lstat(path).then(
    (s) => (s.isFile() ? s.size : 0),
    () => 0,
  );
  if (size === 0) {
    throw new StepFailure(
      ErrorStatus.OUTPUT_FILE_NOT_CREATED,
      `ffmpeg finished but did not write ${output.alias} (${output.fileName}); check that the command writes to {{${output.alias}}}`,
    );
  }
  return size;
}

/** Stores the file: one PUT, or a multipart upload for a large one (then what the result says of it). */
async function put(
  output: StepOutput,
  path: string,
  size: number,
  contentType: string,
  o: CollectOptions,
): Promise<{ upload?: ReportedUpload }> {
  try {
    if (o.planUpload && o.multipartMinBytes !== undefined && size >= o.multipartMinBytes) {
      const plan = await o.planUpload({ alias: output.alias, size, contentType }, o.signal);
      return { upload: await putParts(plan, path, size, { signal: o.signal }) };
    }
    await putFile(output.uploadUrl, path, { size, contentType, signal: o.signal, handoffDir: o.handoffDir });
    return {};
  } catch (err) {
    // 507: the storage's disk is full (the local storage says so before it takes the bytes).
    if (err instanceof StorageAnswer && err.status === 507) {
      throw new StepFailure(ErrorStatus.OUT_OF_SPACE, outOfSpaceMessage(`storing ${output.alias}`));
    }
    throw new StepFailure(ErrorStatus.OUTPUT_UPLOAD_FAILED, `could not store ${output.alias}: ${(err as Error).message}`);
  }
}
