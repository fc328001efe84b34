// The PUT of one output to its presigned URL: the file streamed as the body through node:http(s).
// fetch needed the file wrapped in a web stream and undici's request machinery (loaded on first use),
// a few milliseconds of the runner's CPU per step, taken from ffmpeg on the same cores.
import { createReadStream } from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream/promises';

export interface PutFileOptions {
  size: number;
  contentType: string;
  signal: AbortSignal;
}

/** Resolves once storage answered 2xx; rejects with its status otherwise, or with the transfer's error when it did not answer. */
export async function putFile(url: string, path: string, o: PutFileOptions): Promise<void> {
  const target = new URL(url);
  const request = (target.protocol === 'https:' ? https : http).request(target, {
    method: 'PUT',
    headers: { 'content-length': String(o.size), 'content-type': o.contentType },
    signal: o.signal,
  });
  // on, not once: an error after the answer (the connection reset) must not go unhandled.
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    request.on('response', resolve);
    request.on('error', reject);
  });
  const [, answer] = await Promise.allSettled([pipeline(createReadStream(path), request), answered]);
  if (answer.status === 'rejected') throw answer.reason;
  const response = answer.value;
  response.resume(); // the body says nothing we need; reading it frees the connection for the next PUT
  const status = response.statusCode ?? 0;
  // Storage refusing early (a bad signature) may cut the upload short: its status is the better reason.
  if (status < 200 || status > 299) throw new Error(`storage answered HTTP ${status}`);
  // A 2xx means storage has the whole body (it checks the declared length), whatever the request's own
  // end reported: a premature close, when storage closes the connection with its answer (an API pod
  // shutting down during a rollout), is no failure.
}
