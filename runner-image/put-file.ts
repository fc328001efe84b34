// The PUT of one output to its presigned URL: the file streamed as the body through node:http(s).
// fetch needed the file wrapped in a web stream and undici's request machinery (loaded on first use),
// a few milliseconds of the runner's CPU per step, taken from ffmpeg on the same cores.
// Embedded mode with local storage on the same filesystem: the file is moved into the storage's
// hand-off folder and the PUT names it instead of carrying it (LocalStorage.adoptHandoff), so storing
// an output needs no second copy of it on the disk.
import { randomBytes } from 'node:crypto';
import { setTimeout as wait } from 'node:timers/promises';
import { createReadStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HANDOFF_HEADER, HANDOFF_SIZE_HEADER } from '../core/storage/handoff.ts';

export interface PutFileOptions {
  size: number;
  contentType: string;
  signal: AbortSignal;
  /** The local storage's hand-off folder (the runner's handoffDir setting), when the runner may use it. */
  handoffDir?: string;
  /** Waits between tries; default UPLOAD_RETRY_DELAYS_MS. */
  retryDelaysMs?: readonly number[];
  /** Default CONTINUE_WAIT_MS. */
  continueWaitMs?: number;
}

/** An upload that storage answered 5xx, or that failed on the way (a reset, a refused connection), is tried again after these waits (3 tries in all). */
export const UPLOAD_RETRY_DELAYS_MS = [1_000, 3_000];

/** Tries `put` again while what failed may pass: a 5xx from storage (not 507), or the transfer's own error; not a 4xx, not a cancel. */
export async function withRetries<T>(put: () => Promise<T>, signal: AbortSignal, delaysMs: readonly number[]): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await put();
    } catch (err) {
      // 507: storage is full, which another try will not change (the step fails OUT_OF_SPACE).
      const mayPass = err instanceof StorageAnswer ? err.status >= 500 && err.status !== 507 : true;
      const delay = delaysMs[attempt];
      if (!mayPass || delay === undefined || signal.aborted) throw err;
      // A cancel ends the wait; the next try then fails at once on the aborted signal.
      await wait(delay, undefined, { signal }).catch(() => {});
    }
  }
}

/** Storage answered, but not 2xx. */
export class StorageAnswer extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`storage answered HTTP ${status}`);
    this.name = 'StorageAnswer';
    this.status = status;
  }
}

/** Resolves once storage answered 2xx; rejects with its status otherwise, or with the transfer's error when it did not answer. */
export async function putFile(url: string, path: string, o: PutFileOptions): Promise<void> {
  const handoff = o.handoffDir ? await moveToHandoff(path, o.handoffDir) : null;
  try {
    const headers: Record<string, string> = handoff
      ? { 'content-length': '0', [HANDOFF_HEADER]: handoff.name, [HANDOFF_SIZE_HEADER]: String(o.size) }
      : { 'content-length': String(o.size) };
    // Each try streams the file (or names the hand-off file) afresh.
    await withRetries(
      () =>
        send(
          url,
          handoff ? Readable.from([]) : createReadStream(path),
          { ...headers, 'content-type': o.contentType },
          o.signal,
          o.continueWaitMs,
        ),
      o.signal,
      o.retryDelaysMs ?? UPLOAD_RETRY_DELAYS_MS,
    );
  } finally {
    // Adopted: gone already. Refused or never received: nothing else removes it.
    if (handoff) await rm(handoff.path, { force: true });
  }
}

/** Moves the file into the hand-off folder under a random name; null when it cannot (another filesystem). */
async function moveToHandoff(path: string, handoffDir: string): Promise<{ name: string; path: string } | null> {
  const name = randomBytes(24).toString('base64url');
  const target = join(handoffDir, name);
  try {
    await rename(path, target);
    return { name, path: target };
  } catch {
    return null; // EXDEV and the like: the bytes travel in the body instead
  }
}

/**
 * How long a PUT with a body waits for storage's "100 Continue" before it sends the body anyway, for
 * a server that ignores `Expect` (curl waits 1 s too).
 */
export const CONTINUE_WAIT_MS = 1_000;

/**
 * One PUT of `body`; resolves with the ETag storage answered (a part's, for a multipart upload), or null.
 * A body goes only once storage asked for it (`Expect: 100-continue`): storage that refuses the PUT
 * from its head (a bad or expired signature, no room, a part of the wrong size) answers before a byte
 * of it is sent. Sent at once, the body would meet the connection storage closed with its answer, and
 * the upload would fail with that cut (EPIPE, a reset: retried as a transfer error) instead of the
 * status that says why.
 */
export async function send(
  url: string,
  body: Readable,
  headers: Record<string, string>,
  signal: AbortSignal,
  continueWaitMs = CONTINUE_WAIT_MS,
): Promise<string | null> {
  const target = new URL(url);
  const hasBody = headers['content-length'] !== '0';
  const request = (target.protocol === 'https:' ? https : http).request(target, {
    method: 'PUT',
    headers: hasBody ? { ...headers, expect: '100-continue' } : headers,
    signal,
  });
  // on, not once: an error after the answer (the connection reset) must not go unhandled.
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    request.on('response', resolve);
    request.on('error', reject);
  });
  const sending = hasBody ? bodyWhenAsked(request, body, continueWaitMs) : pipeline(body, request).then(() => true);
  const [sent, answer] = await Promise.allSettled([sending, answered]);
  if (answer.status === 'rejected') throw answer.reason;
  const response = answer.value;
  response.resume(); // the body says nothing we need; reading it frees the connection for the next PUT
  // A request whose body never went is unfinished: its connection cannot carry another.
  if (sent.status === 'fulfilled' && !sent.value) request.destroy();
  const status = response.statusCode ?? 0;
  // Storage refusing early may also cut an upload short that already began: its status is the better reason.
  if (status < 200 || status > 299) throw new StorageAnswer(status);
  // A 2xx means storage has the whole body (it checks the declared length), whatever the request's own
  // end reported: a premature close, when storage closes the connection with its answer (an API pod
  // shutting down during a rollout), is no failure.
  const etag = response.headers.etag;
  return typeof etag === 'string' ? etag : null;
}

/**
 * Streams `body` into `request` once storage sends "100 Continue" (or after `waitMs` without a word);
 * resolves false, sending nothing, when storage answers first.
 */
function bodyWhenAsked(request: http.ClientRequest, body: Readable, waitMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    let decided = false;
    const decide = (send: boolean, error?: Error) => {
      if (decided) return;
      decided = true;
      clearTimeout(timer);
      if (send) return void pipeline(body, request).then(() => resolve(true), reject);
      body.destroy(); // closes the file
      if (error) reject(error);
      else resolve(false);
    };
    const timer = setTimeout(() => decide(true), waitMs);
    request.once('continue', () => decide(true));
    request.once('response', () => decide(false));
    request.once('error', (error) => decide(false, error));
  });
}
