// DOWNLOADING and PREPARING_INPUT_FILES: inputs go to `.in/<alias>/<name>` under server-chosen safe
// names; a zip (input_compressed_folder) is extracted into the working folder itself.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorStatus } from '../core/commands/error-status.ts';
import type { StepSpec } from '../core/jobs/step-spec.ts';
import { createAddressPolicy } from '../core/net/address-policy.ts';
import { DownloadError } from '../core/net/download.ts';
import { downloadWithRetries } from '../core/net/download-retries.ts';
import { fileNameFromUrl, safeLocalName } from '../core/net/file-name.ts';
import { ArchiveRefused, DEFAULT_UNZIP_LIMITS, safeUnzip } from '../core/archive/safe-unzip.ts';
import { redact, StepFailure } from './step-failure.ts';

export const INPUT_DIR = '.in';
export const OUTPUT_DIR = '.out';

export interface DownloadedInputs {
  /** alias -> path relative to the working folder */
  paths: Map<string, string>;
  bytes: number;
  archivePath: string | null;
}

/** Where each input will be (alias -> path relative to the working folder), known before any download. */
export function inputPaths(spec: StepSpec): Map<string, string> {
  return new Map(spec.inputs.map((input) => [input.alias, localPath(`input ${input.alias}`, input.url, input.alias)]));
}

/** `.in/<folder>/<safe name>`: the server chooses the folder, the URL only gives the name. */
function localPath(label: string, url: string, folder: string): string {
  const name = fileNameFromUrl(url);
  if (!name)
    throw new StepFailure(
      ErrorStatus.INVALID_INPUT_FILE_NAME,
      `${label}: the URL ${redact(url)} does not end in a file name (e.g. .../video.mp4)`,
    );
  return join(INPUT_DIR, folder, safeLocalName(name));
}

export async function downloadInputs(spec: StepSpec, dir: string, signal: AbortSignal): Promise<DownloadedInputs> {
  const policy = createAddressPolicy(spec.download.allow);
  const paths = new Map<string, string>();
  let bytes = 0;
  const fetchOne = async (label: string, url: string, source: 'external' | 'storage', folder: string): Promise<string> => {
    const relative = localPath(label, url, folder);
    await mkdir(join(dir, INPUT_DIR, folder), { recursive: true });
    try {
      const result = await downloadWithRetries(url, join(dir, relative), {
        maxBytes: spec.download.maxBytes,
        timeoutMs: spec.download.timeoutSeconds * 1000,
        policy: source === 'storage' ? null : policy,
        signal,
      });
      bytes += result.bytes;
    } catch (err) {
      if (err instanceof DownloadError) throw new StepFailure(err.errorStatus, `${label}: ${err.message}`);
      throw err;
    }
    return relative;
  };
  for (const input of spec.inputs) paths.set(input.alias, await fetchOne(`input ${input.alias}`, input.url, input.source, input.alias));
  const archivePath = spec.archive ? await fetchOne('input_compressed_folder', spec.archive.url, spec.archive.source, '_archive') : null;
  return { paths, bytes, archivePath };
}

/** Extracts the input zip into the working folder, then removes the zip. */
export async function extractArchive(dir: string, archivePath: string, maxBytes: number): Promise<void> {
  try {
    await safeUnzip(join(dir, archivePath), dir, {
      ...DEFAULT_UNZIP_LIMITS,
      maxTotalBytes: Math.min(DEFAULT_UNZIP_LIMITS.maxTotalBytes, maxBytes * 4),
      reservedTopLevel: [INPUT_DIR, OUTPUT_DIR],
    });
  } catch (err) {
    if (err instanceof ArchiveRefused) throw new StepFailure(ErrorStatus.INVALID_INPUT_ARCHIVE, `input_compressed_folder: ${err.message}`);
    throw err;
  } finally {
    await rm(join(dir, archivePath), { force: true });
  }
}
