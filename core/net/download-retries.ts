// Input downloads are tried again when what failed was not the URL's fault and may pass (a connection
// refused or reset, a silence, an HTTP 5xx: DownloadError.retryable), before the command fails
// UNREACHABLE_INPUT_FILE. A 4xx, a refused address, a file too large or a spent time budget are final.
import { setTimeout as wait } from 'node:timers/promises';
import { DownloadError, downloadToFile, type DownloadOptions, type DownloadResult } from './download.ts';

/** Waits before the 2nd and 3rd try (3 tries in all): documented in docs/automation.md. */
export const DOWNLOAD_RETRY_DELAYS_MS = [1_000, 3_000];

export async function downloadWithRetries(
  url: string,
  destPath: string,
  opts: DownloadOptions,
  delaysMs: readonly number[] = DOWNLOAD_RETRY_DELAYS_MS,
): Promise<DownloadResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      // Another try of a large file takes one connection, not several that may fail the same way.
      return await downloadToFile(url, destPath, attempt === 0 ? opts : { ...opts, rangedParts: 1 });
    } catch (err) {
      const delay = delaysMs[attempt];
      if (!(err instanceof DownloadError) || !err.retryable || delay === undefined || opts.signal?.aborted) {
        if (err instanceof DownloadError && err.retryable && attempt > 0) err.message += ` (tried ${attempt + 1} times)`;
        throw err;
      }
      // A cancel ends the wait; the next try then rejects with the signal's reason.
      await wait(delay, undefined, { signal: opts.signal }).catch(() => {});
    }
  }
}
