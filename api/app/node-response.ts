// Answers a route writes straight to node's response, past Hono's Response and its web stream (the
// stored-file downloads of storage-files.ts): the route returns SENT_DIRECTLY, @hono/node-server's
// token for "already answered", and whoever reads the status afterwards asks responseStatus().
import { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context } from 'hono';

export const SENT_DIRECTLY: Response = RESPONSE_ALREADY_SENT;

/**
 * Node's response for this request, when the app runs on @hono/node-server and nothing was sent yet;
 * null otherwise (app.fetch called directly, as some tests do).
 */
export function nodeResponse(c: Context): ServerResponse | null {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  return outgoing instanceof ServerResponse && !outgoing.headersSent ? outgoing : null;
}

/** The status the client was answered with: node's own for an answer sent directly. */
export function responseStatus(c: Context): number {
  if (c.res !== SENT_DIRECTLY) return c.res.status;
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  return outgoing instanceof ServerResponse ? outgoing.statusCode : c.res.status;
}
