// The /v1 body limit. Hono's bodyLimit looks at `c.req.raw.body` first, which makes @hono/node-server
// build a whole fetch Request with a web stream over the socket for every submit (about a fifth of the
// service's time per submit, profiled under a burst); routes then read the body through that stream.
// A body with a Content-Length needs no stream to be judged: it is refused or passed on from the
// header alone, and the route reads it straight from the socket. Only a body without one (chunked)
// goes through Hono's bodyLimit, which counts it as it is read.
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

const DIGITS = /^\d+$/;

export function limitBody(maxBytes: number): MiddlewareHandler {
  // The unread rest of the body makes the connection unusable: tell the client not to reuse it.
  const tooLarge = (c: Context) => c.json({ detail: `Request body too large (limit ${maxBytes} bytes)` }, 413, { connection: 'close' });
  const counted = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return (c, next) => {
    const length = c.req.header('content-length');
    // Both headers: Node's parser refuses such a request before it gets here; counting is the safe side.
    if (length === undefined || !DIGITS.test(length) || c.req.header('transfer-encoding') !== undefined) return counted(c, next);
    return Number(length) > maxBytes ? Promise.resolve(tooLarge(c)) : next();
  };
}
