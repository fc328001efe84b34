// DOWNLOADING and PREPARING_INPUT_FILES: inputs go to `.in/<alias>/<name>` under server-chosen safe
// names; a zip (input_compressed_folder) is extracted into the working folder itself.
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ErrorStatus } from '../core/commands/error-status.ts';
import type { StepSpec } from '../core/jobs/step-spec.ts';
import { createAddressPolicy } from '../core/net/address-policy.ts';
import { DownloadError, refusedBeforeConnecting } from '../core/net/download.ts';
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

/**
 * Downloads that run at once. Inputs on remote hosts are each limited by their own connection (its
 * latency, the host's per-connection rate), so a command with several inputs waits for the slowest,
 * not for their sum; a few at a time keep that without opening one connection per input.
 */
export const DOWNLOADS_AT_ONCE = 4;

interface Download {
  label: string;
  url: string;
  source: 'external' | 'storage';
  /** Relative to the working folder. */
  path: string;
}

/**
 * Downloads the inputs (and the archive), a few at a time. Every local name, and every address given
 * as an IP literal, is checked before the first request. The first download that fails stops the
 * others; once all have stopped (nothing is still writing into the folder when this settles), the
 * failure reported is that of the first input, in the command's order, that failed of itself.
 */
export async function downloadInputs(spec: StepSpec, dir: string, signal: AbortSignal): Promise<DownloadedInputs> {
  const paths = inputPaths(spec);
  const archivePath = spec.archive ? localPath('input_compressed_folder', spec.archive.url, '_archive') : null;
  const downloads: Download[] = spec.inputs.map((input) => ({
    label: `input ${input.alias}`,
    url: input.url,
    source: input.source,
    path: paths.get(input.alias)!,
  }));
  if (spec.archive && archivePath) {
    downloads.push({ label: 'input_compressed_folder', url: spec.archive.url, source: spec.archive.source, path: archivePath });
  }
  const policy = createAddressPolicy(spec.download.allow);
  const policyFor = (d: Download) => (d.source === 'storage' ? null : policy);
  // Refusals known without a connection, in the command's order: the first is the one named, always.
  for (const d of downloads) {
    const refused = refusedBeforeConnecting(d.url, policyFor(d));
    if (refused) throw new StepFailure(refused.errorStatus, `${d.label}: ${refused.message}`);
  }
  const stop = new AbortController();
  const downloadSignal = AbortSignal.any([signal, stop.signal]);
  /** Each download that failed of itself, by its place in `downloads`. */
  const failures = new Map<number, unknown>();
  let bytes = 0;
  const fetchOne = async (d: Download): Promise<void> => {
    const destPath = join(dir, d.path);
    await mkdir(dirname(destPath), { recursive: true });
    try {
      const result = await downloadWithRetries(d.url, destPath, {
        maxBytes: spec.download.maxBytes,
        timeoutMs: spec.download.timeoutSeconds * 1000,
        policy: policyFor(d),
        signal: downloadSignal,
        // The runner's event loop has nothing else to answer: bodies go to disk as they arrive.
        syncWrites: true,
      });
      bytes += result.bytes;
    } catch (err) {
      if (err instanceof DownloadError) throw new StepFailure(err.errorStatus, `${d.label}: ${err.message}`);
      throw err;
    }
  };
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < downloads.length && !downloadSignal.aborted) {
      const place = next++;
      try {
        await fetchOne(downloads[place]);
      } catch (err) {
        // Stopped by another's failure (or from outside): not a cause of its own.
        if (downloadSignal.aborted && err === downloadSignal.reason) continue;
        failures.set(place, err);
        stop.abort(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DOWNLOADS_AT_ONCE, downloads.length) }, lane));
  if (signal.aborted) throw signal.reason;
  // Several that fail at about the same time (two refused addresses): the first in the command's order.
  if (failures.size > 0) throw failures.get(Math.min(...failures.keys()));
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
