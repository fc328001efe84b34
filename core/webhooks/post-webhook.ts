// One webhook attempt: POST the body to the URL through the same SSRF guard as input downloads.
// Redirects are not followed (a 3xx is a failed attempt), at most a few KB of the answer are read,
// the connection has a short deadline of its own (a peer that drops packets costs seconds, not the
// attempt's whole deadline), and the whole attempt has a deadline.
import type http from 'node:http';
import type { AddressPolicy } from '../net/address-policy.ts';
import { guardedRequest } from '../net/guarded-request.ts';

/** The answer's status (null when none came) and, for anything but a 2xx, what went wrong. */
export interface PostOutcome {
  statusCode: number | null;
  error: string | null;
}

export interface PostOptions {
  policy: AddressPolicy;
  timeoutMs: number;
  /** Longest wait for the TCP connection (capped by `timeoutMs`); default DEFAULT_CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
  /** Stops the attempt; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;

/** Bytes of an error answer read to quote it; the rest is never read. */
const MAX_ANSWER_BYTES = 4096;
/** The receiver's text kept in the delivery log: a short excerpt, enough to recognise an error page. */
export const EXCERPT_CHARS = 100;

class AttemptFailed extends Error {}

/** What messages show of a URL: never its query string (it may hold a token) or credentials. */
function describe(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

export async function postWebhook(url: string, body: string, headers: Record<string, string>, o: PostOptions): Promise<PostOutcome> {
  const target = new URL(url);
  const label = `POST ${describe(target)}`;
  const deadline = AbortSignal.timeout(o.timeoutMs);
  const signal = o.signal ? AbortSignal.any([deadline, o.signal]) : deadline;
  try {
    const { response } = await guardedRequest({
      method: 'POST',
      url: target,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      body,
      policy: o.policy,
      connectTimeoutMs: Math.min(o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, o.timeoutMs),
      signal,
      label,
      errors: {
        refused: (reason) => new AttemptFailed(`${label} refused: ${reason}`),
        unreachable: (message) => new AttemptFailed(message),
      },
    });
    const status = response.statusCode ?? 0;
    if (status >= 200 && status <= 299) {
      response.destroy(); // delivered: the answer's body is not needed
      return { statusCode: status, error: null };
    }
    const quoted = await readSome(response);
    const why = status >= 300 && status <= 399 ? 'redirects are not followed' : quoted;
    return { statusCode: status, error: `${label} answered HTTP ${status}${why ? `: ${why}` : ''}` };
  } catch (error) {
    if (o.signal?.aborted) throw o.signal.reason;
    if (error instanceof AttemptFailed) return { statusCode: null, error: error.message };
    if (deadline.aborted) return { statusCode: null, error: `${label} timed out after ${o.timeoutMs} ms` };
    return { statusCode: null, error: `${label} failed: ${causeOf(error)}` };
  }
}

/** The start of an answer's body, as an excerpt for the delivery log; whatever arrived if it fails midway. */
async function readSome(response: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of response) {
      chunks.push(chunk as Buffer);
      bytes += (chunk as Buffer).length;
      if (bytes >= MAX_ANSWER_BYTES) break;
    }
  } catch {
    // a cut or timed-out answer: quote what came
  } finally {
    response.destroy();
  }
  return excerpt(Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8'));
}

/**
 * At most EXCERPT_CHARS printable characters of a receiver's text, on one line: control and format
 * characters (line breaks, escapes, bidi overrides, zero-width marks), unassigned and private-use
 * code points become spaces, runs of spaces one.
 */
export function excerpt(text: string): string {
  const printable = text.replace(/[\p{C}\p{Zl}\p{Zp}\s]+/gu, ' ').trim();
  return [...printable].slice(0, EXCERPT_CHARS).join('').trimEnd();
}

function causeOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(causeOf).join('; ');
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
