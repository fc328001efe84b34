// Downloads one input URL to a local file, refusing to reach non-public addresses (SSRF).
//
// The address checks (IP literals before connecting, every resolved address, the connected socket)
// are core/net/guarded-connection.ts, shared with the webhook sender. Redirects are followed by hand
// so every hop goes through all three again.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { isOutOfSpace, outOfSpaceMessage } from '../storage/out-of-space.ts';
import { ErrorStatus } from '../commands/error-status.ts';
import type { AddressPolicy } from './address-policy.ts';
import { hostOf, literalRefusal, portOf } from './guarded-connection.ts';
import { guardedRequest, type GuardedResponse } from './guarded-request.ts';
import { writeBodySync } from './sync-body-writes.ts';
import { checkRangeAnswer, createPartsFile, planRanges, RangesRefused, writePart, type RangePlan } from './ranged-download.ts';

export class DownloadError extends Error {
  errorStatus: ErrorStatus;
  /** Not the URL's fault and may pass (a connection error, a silence, an HTTP 5xx): worth another try (download-retries.ts). */
  retryable: boolean;
  constructor(errorStatus: ErrorStatus, message: string, retryable = false) {
    super(message);
    this.name = 'DownloadError';
    this.errorStatus = errorStatus;
    this.retryable = retryable;
  }
}

export interface DownloadOptions {
  /** INPUT_FILE_TOO_LARGE beyond this many bytes (declared Content-Length or bytes received). */
  maxBytes: number;
  /** Overall deadline, body included; UNREACHABLE_INPUT_FILE when it expires. */
  timeoutMs: number;
  /** null = a URL the service minted itself (its own storage): no address checks. */
  policy: AddressPolicy | null;
  /** Default 5. */
  maxRedirects?: number;
  /** Longest silence on the connection (connecting included); default min(timeoutMs, 30 s). */
  idleTimeoutMs?: number;
  /** Cancels the download; the promise then rejects with `signal.reason`, not a DownloadError. */
  signal?: AbortSignal;
  /** A large file from a host that takes byte ranges comes in this many ranges at once (ranged-download.ts); default 4, 1 = never. */
  rangedParts?: number;
  /** The smallest file fetched in ranges; default 64 MiB. */
  rangedMinBytes?: number;
  /**
   * Bodies are written into the file as they arrive, on the event loop (sync-body-writes.ts): less CPU
   * than a write stream. For the runner, which does nothing else meanwhile; the service leaves it off
   * (the default): its event loop answers requests.
   */
  syncWrites?: boolean;
}

export interface DownloadResult {
  bytes: number;
  contentType: string | null;
  /** The URL the body came from after redirects, query string included. */
  finalUrl: string;
}

/** How much a download may hold in memory before it waits for the disk. */
const WRITE_BUFFER_BYTES = 1 << 20;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export const RANGED_PARTS = 4;
export const RANGED_MIN_BYTES = 64 << 20;

/**
 * Streams `url` into `destPath` (written under a temporary name in the same folder, then renamed;
 * nothing is left behind on failure). Rejects with a DownloadError whose errorStatus is
 * UNREACHABLE_INPUT_FILE (bad URL or scheme, credentials in the URL, DNS/connect/TLS failure, HTTP
 * error status, too many redirects, timeout), FORBIDDEN_INPUT_ADDRESS, INPUT_FILE_TOO_LARGE or OUT_OF_SPACE
 * (the local disk is full).
 * Messages show at most the URL's origin and path: query strings may hold signatures.
 */
export async function downloadToFile(url: string, destPath: string, opts: DownloadOptions): Promise<DownloadResult> {
  const maxRedirects = opts.maxRedirects ?? 5;
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([deadline, opts.signal]) : deadline;
  let target = parseTarget(url, 'URL');
  let inRanges = true;
  let redirects = 0;
  try {
    for (;;) {
      const { request, response } = await openResponse(target, opts, signal);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(status) && location) {
        request.destroy();
        if (redirects++ >= maxRedirects) {
          throw unreachable(`GET ${describe(target)} redirected more than ${maxRedirects} times`);
        }
        target = parseTarget(resolveLocation(location, target), 'redirect target');
        continue;
      }
      if (status < 200 || status > 299) {
        request.destroy();
        throw unreachable(`GET ${describe(target)} answered HTTP ${status}`, status >= 500);
      }
      const contentType = response.headers['content-type'] ?? null;
      const plan =
        inRanges && Number(response.headers['content-length']) <= opts.maxBytes ? planRanges(response, rangeOptions(opts)) : null;
      if (plan) {
        const bytes = await saveInRanges(response, plan, target, destPath, opts, signal).catch((error: unknown) => {
          if (error instanceof RangesRefused) return null;
          throw error;
        });
        if (bytes !== null) return { bytes, contentType, finalUrl: target.href };
        // This host does not answer ranges as asked: the file whole, from a fresh GET.
        inRanges = false;
        continue;
      }
      const bytes = await saveBody(response, target, destPath, opts, signal);
      return { bytes, contentType, finalUrl: target.href };
    }
  } catch (error) {
    throw explainFailure(error, target, opts, deadline);
  }
}

/**
 * What downloadToFile would refuse before opening anything (a URL it cannot fetch, an IP-literal
 * host the policy refuses), with the same error; null when it would try. Lets a caller check a
 * command's inputs in their order before any download starts.
 */
export function refusedBeforeConnecting(url: string, policy: AddressPolicy | null): DownloadError | null {
  try {
    const target = parseTarget(url, 'URL');
    const refusal = literalRefusal(policy, hostOf(target), portOf(target));
    return refusal ? forbidden(target, refusal) : null;
  } catch (error) {
    if (error instanceof DownloadError) return error;
    throw error;
  }
}

function unreachable(message: string, retryable = false): DownloadError {
  return new DownloadError(ErrorStatus.UNREACHABLE_INPUT_FILE, message, retryable);
}

/** What messages may show of a URL: never the query string, fragment or credentials. */
function describe(target: URL): string {
  return `${target.origin}${target.pathname}`;
}

function parseTarget(url: string, what: string): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw unreachable(`the ${what} is not a valid URL`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw unreachable(`unsupported scheme "${target.protocol}" in the ${what}: only http and https are fetched`);
  }
  // Credentials in URLs are refused rather than silently dropped or sent along.
  if (target.username !== '' || target.password !== '') {
    throw unreachable(`the ${what} ${describe(target)} holds user credentials, which are not supported`);
  }
  return target;
}

function resolveLocation(location: string, base: URL): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw unreachable(`GET ${describe(base)} redirected to an invalid URL`);
  }
}

function forbidden(target: URL, reason: string): DownloadError {
  return new DownloadError(ErrorStatus.FORBIDDEN_INPUT_ADDRESS, `GET ${describe(target)} refused: ${reason}`);
}

function openResponse(
  target: URL,
  opts: DownloadOptions,
  signal: AbortSignal,
  headers: Record<string, string> = {},
): Promise<GuardedResponse> {
  const idleMs = opts.idleTimeoutMs ?? Math.min(opts.timeoutMs, 30_000);
  return guardedRequest({
    method: 'GET',
    url: target,
    headers: { accept: '*/*', 'accept-encoding': 'identity', ...headers },
    policy: opts.policy,
    connectTimeoutMs: idleMs,
    idleTimeoutMs: idleMs,
    signal,
    label: `GET ${describe(target)}`,
    // What the connection reports (no connection, a silence) may pass: worth another try.
    errors: { refused: (reason) => forbidden(target, reason), unreachable: (message) => unreachable(message, true) },
  });
}

async function saveBody(
  response: IncomingMessage,
  target: URL,
  destPath: string,
  opts: DownloadOptions,
  signal: AbortSignal,
): Promise<number> {
  const { maxBytes } = opts;
  const tooLarge = (size: string) =>
    new DownloadError(
      ErrorStatus.INPUT_FILE_TOO_LARGE,
      `GET ${describe(target)}: the file is ${size}, above the limit of ${maxBytes} bytes`,
    );
  const lengthHeader = response.headers['content-length'];
  const declared = lengthHeader === undefined ? NaN : Number(lengthHeader);
  if (declared > maxBytes) {
    response.destroy();
    throw tooLarge(`${declared} bytes`);
  }
  // Same folder as the destination so the rename is atomic; 'wx' never follows an existing link.
  const tempPath = path.join(path.dirname(destPath), `.${path.basename(destPath)}.${randomUUID()}.part`);
  const write = opts.syncWrites ? writeSynchronously : writeThroughStream;
  try {
    const bytes = await write(response, tempPath, {
      limit: maxBytes,
      tooMuch: () => tooLarge(`more than ${maxBytes} bytes`),
      signal,
    });
    if (!Number.isNaN(declared) && bytes !== declared) {
      throw unreachable(`GET ${describe(target)}: the body ended after ${bytes} of ${declared} bytes`);
    }
    await rename(tempPath, destPath);
    return bytes;
  } catch (error) {
    await unlink(tempPath).catch(() => {});
    throw error;
  }
}

interface BodyLimits {
  limit: number;
  tooMuch: () => Error;
  signal: AbortSignal;
}

/** The body through a write stream (the disk's work off the event loop); returns the bytes written. */
async function writeThroughStream(response: IncomingMessage, tempPath: string, l: BodyLimits): Promise<number> {
  let bytes = 0;
  // Counted as the chunks pass, not through a Transform stage of its own: one stream less per chunk.
  response.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > l.limit) response.destroy(l.tooMuch());
  });
  // Larger writes than the 16 KiB default: fewer calls into the file system for large media.
  const file = createWriteStream(tempPath, { flags: 'wx', highWaterMark: WRITE_BUFFER_BYTES });
  try {
    await pipeline(response, file, { signal: l.signal });
    return bytes;
  } finally {
    // A stream destroyed before its file is open still opens (creates) it, then closes: the caller
    // removes the file only after that, or it would be left behind.
    if (!file.closed) await once(file, 'close').catch(() => {});
  }
}

/** The body written as it arrives (sync-body-writes.ts); returns the bytes written. */
async function writeSynchronously(response: IncomingMessage, tempPath: string, l: BodyLimits): Promise<number> {
  const file = await open(tempPath, 'wx').catch((error: unknown) => {
    response.destroy();
    throw error;
  });
  try {
    return await writeBodySync(response, { fd: file.fd, position: 0, atLimit: 'fail', ...l });
  } finally {
    await file.close();
  }
}

function rangeOptions(opts: DownloadOptions): { parts: number; minBytes: number } {
  return { parts: opts.rangedParts ?? RANGED_PARTS, minBytes: opts.rangedMinBytes ?? RANGED_MIN_BYTES };
}

/**
 * Writes the file in the plan's parts at once: the first from `first` (the answer already open), the
 * others from ranged GETs of the same URL. Rejects with RangesRefused when an answer is not the range
 * asked for; any failure stops the other parts, and nothing is left behind.
 */
async function saveInRanges(
  first: IncomingMessage,
  plan: RangePlan,
  target: URL,
  destPath: string,
  opts: DownloadOptions,
  signal: AbortSignal,
): Promise<number> {
  const tempPath = path.join(path.dirname(destPath), `.${path.basename(destPath)}.${randomUUID()}.part`);
  const stop = new AbortController();
  const partSignal = AbortSignal.any([signal, stop.signal]);
  const file = await createPartsFile(tempPath).catch((error: unknown) => {
    first.destroy();
    throw error;
  });
  // The first answer was opened before the parts' signal existed: it is stopped with them by hand.
  stop.signal.addEventListener('abort', () => first.destroy(), { once: true });
  const fetchPart = async ([firstByte, lastByte]: [number, number]): Promise<void> => {
    const { request, response } = await openResponse(target, opts, partSignal, {
      range: `bytes=${firstByte}-${lastByte}`,
      'if-range': plan.validator,
    });
    try {
      checkRangeAnswer(response, [firstByte, lastByte], plan);
      await writePart(response, file, firstByte, lastByte - firstByte + 1, true, opts.syncWrites);
    } finally {
      request.destroy();
    }
  };
  const parts = [
    writePart(first, file, 0, plan.parts[0][1] + 1, false, opts.syncWrites).finally(() => first.destroy()),
    ...plan.parts.slice(1).map(fetchPart),
  ].map((part) =>
    part.catch((error: unknown) => {
      stop.abort(error);
      throw error;
    }),
  );
  const outcomes = await Promise.allSettled(parts);
  try {
    await file.close();
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    // The part that failed first is the cause; the others were stopped by it.
    if (failed) throw stop.signal.aborted ? stop.signal.reason : failed.reason;
    await rename(tempPath, destPath);
    return plan.size;
  } catch (error) {
    await unlink(tempPath).catch(() => {});
    throw error;
  }
}

function explainFailure(error: unknown, target: URL, opts: DownloadOptions, deadline: AbortSignal): unknown {
  // Cancelled: whatever failed on the way out (a part, a timeout at the same moment) is not the cause.
  if (opts.signal?.aborted) return opts.signal.reason;
  if (error instanceof DownloadError) return error;
  if (isOutOfSpace(error)) {
    return new DownloadError(ErrorStatus.OUT_OF_SPACE, outOfSpaceMessage(`downloading ${describe(target)}`));
  }
  // The whole download's time is spent: not tried again.
  if (deadline.aborted) return unreachable(`GET ${describe(target)} timed out after ${opts.timeoutMs} ms`);
  // A connection refused or reset may pass; a name that does not exist will not.
  return unreachable(`GET ${describe(target)} failed: ${causeOf(error)}`, !/ENOTFOUND/.test(causeOf(error)));
}

function causeOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(causeOf).join('; ');
  }
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
