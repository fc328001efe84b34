// Serves and receives the local-folder storage's files at /storage/<key> (mount the app at root).
// GET/HEAD: public/... keys for anyone, other keys with a signed GET URL. PUT: signed PUT URL only,
// answered S3-style (200, ETag = quoted MD5 hex) so runners use one client for S3 and local mode; a
// part's ETag is opaque, as in S3 (see LocalStorage.receivePart).
// A PUT carrying uploadId and partNumber is a multipart part upload, and needs a signed part URL;
// its body must be exactly the part size the URL was signed for.
// A full disk answers 507 with a detail: at once when the body cannot fit (a free-space check before
// reading it), or as soon as a write meets ENOSPC/EDQUOT; nothing half-written is kept.
import { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { Hono } from 'hono';
import type { Context } from 'hono';
import type { ByteRange } from '../../core/storage/storage.ts';
import { MultipartConflict, UploadNotFound } from '../../core/storage/storage.ts';
import { MAX_PART_BYTES } from '../../core/storage/multipart.ts';
import { assertValidKey } from '../../core/storage/keys.ts';
import { contentTypeForFileName } from '../../core/media/mime.ts';
import { normalizeContentType } from '../../core/storage/content-types.ts';
import { ObjectSizeMismatch } from '../../core/storage/storage.ts';
import { HandoffRefused, PART_NUMBER_PARAM, UPLOAD_ID_PARAM } from '../../core/storage/local-storage.ts';
import { HANDOFF_HEADER, HANDOFF_SIZE_HEADER } from '../../core/storage/handoff.ts';
import { isOutOfSpace } from '../../core/storage/out-of-space.ts';
import type { LocalStorage } from '../../core/storage/local-storage.ts';
import { DestinationClosed } from '../../core/storage/send-file.ts';
import { nodeResponse, SENT_DIRECTLY } from '../app/node-response.ts';

const ROUTE_PREFIX = '/storage/';
/** S3's limit for a single PUT. */
export const DEFAULT_MAX_UPLOAD_BYTES = 5 * 1024 ** 3;
export const PUBLIC_CACHE_CONTROL = 'public, max-age=300';
export const SIGNED_CACHE_CONTROL = 'private, no-store';

/** What a 507's Retry-After suggests: space comes back when an operator or a cleanup frees it. */
const OUT_OF_SPACE_RETRY_SECONDS = 60;

export interface StorageFilesOptions {
  /** Bytes a PUT must leave free on the storage's filesystem (FFOP_DISK_RESERVE_BYTES); else 507. */
  reserveBytes?: number;
  /** Cap on a whole-object PUT. */
  maxUploadBytes?: number;
  /** Cap on one multipart part; S3's 5 GiB by default. */
  maxPartBytes?: number;
}

export function storageFilesRoutes(storage: LocalStorage, options: StorageFilesOptions = {}): Hono {
  const maxUploadBytes = options.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES;
  const maxPartBytes = options.maxPartBytes ?? MAX_PART_BYTES;
  const reserveBytes = options.reserveBytes ?? 0;
  const app = new Hono();
  // Hono routes HEAD to GET handlers; serveObject looks at the real method to skip the body.
  app.get('/storage/*', (c) => serveObject(c, storage));
  app.put('/storage/*', (c) => {
    const query = new URL(c.req.url).searchParams;
    return query.has(UPLOAD_ID_PARAM) || query.has(PART_NUMBER_PARAM)
      ? receivePart(c, storage, maxPartBytes, reserveBytes)
      : receiveObject(c, storage, maxUploadBytes, reserveBytes);
  });
  return app;
}

async function serveObject(c: Context, storage: LocalStorage): Promise<Response> {
  const url = new URL(c.req.url);
  const key = keyFromPath(url.pathname);
  if (key === null) return problem(c, 400, 'Invalid storage key');
  const access = storage.authorize('GET', key, url.searchParams);
  if (!access.allowed) return problem(c, 403, access.detail);

  const object = await storage.open(key);
  if (object === null) return problem(c, 404, 'File not found');

  const headers = new Headers({
    'Content-Type': object.contentType,
    'Accept-Ranges': 'bytes',
    ETag: object.etag,
    'Last-Modified': new Date(object.mtimeMs).toUTCString(),
    'Cache-Control': access.visibility === 'public' ? PUBLIC_CACHE_CONTROL : SIGNED_CACHE_CONTROL,
    'Content-Disposition': inlineDisposition(key.slice(key.lastIndexOf('/') + 1)),
    'X-Content-Type-Options': 'nosniff',
    // Stored files are user content on the API's origin: never let an HTML or SVG file run script.
    'Content-Security-Policy': 'sandbox',
  });

  const range = parseRange(c.req.header('range'), object.size);
  if (range === 'unsatisfiable') {
    await object.close();
    return c.json({ detail: 'Requested range not satisfiable' }, 416, {
      'Content-Range': `bytes */${object.size}`,
      'Cache-Control': 'no-store',
    });
  }
  let status = 200;
  if (range) {
    status = 206;
    headers.set('Content-Range', `bytes ${range.start}-${range.end}/${object.size}`);
  }
  headers.set('Content-Length', String(range ? range.end - range.start + 1 : object.size));

  if (c.req.method === 'HEAD') {
    await object.close();
    return new Response(null, { status, headers });
  }
  // On node's server, the bytes go straight from the file to the response (send-file.ts): a web
  // stream of fs.createReadStream's chunks ran at a fifth of a static server's speed.
  const outgoing = nodeResponse(c);
  if (outgoing === null) {
    const body = Readable.toWeb(object.stream(range)) as ReadableStream<Uint8Array>;
    return new Response(body, { status, headers });
  }
  outgoing.writeHead(status, Object.fromEntries(headers));
  object.send(outgoing, range).then(
    () => outgoing.end(),
    // The client went away, or the file could not be read: its answer stops short of Content-Length.
    (err: unknown) => outgoing.destroy(err instanceof DestinationClosed ? undefined : (err as Error)),
  );
  return SENT_DIRECTLY;
}

async function receiveObject(c: Context, storage: LocalStorage, maxUploadBytes: number, reserveBytes: number): Promise<Response> {
  const url = new URL(c.req.url);
  const key = keyFromPath(url.pathname);
  if (key === null) return problem(c, 400, 'Invalid storage key');
  const access = storage.authorize('PUT', key, url.searchParams);
  if (!access.allowed) return problem(c, 403, access.detail);

  const size = contentLength(c);
  if (size === null) return problem(c, 411, 'Content-Length is required');
  if (size > maxUploadBytes) return problem(c, 413, `File larger than ${maxUploadBytes} bytes`);
  const contentType = normalizeContentType(c.req.header('content-type')) ?? contentTypeForFileName(key);
  const handoff = c.req.header(HANDOFF_HEADER);
  if (handoff !== undefined) return adoptHandoff(c, storage, key, handoff, contentType, maxUploadBytes);
  const full = await refuseWhenFull(c, storage, `the file (${size} bytes)`, size, reserveBytes);
  if (full) return full;

  let md5: string;
  try {
    md5 = await storage.receiveObject(key, requestBody(c), { size, contentType });
  } catch (err) {
    if (err instanceof ObjectSizeMismatch) return problem(c, 400, 'Body length does not match Content-Length');
    if (isOutOfSpace(err)) return outOfSpace(c, `the file (${size} bytes)`);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOTEMPTY' || code === 'EEXIST') {
      return problem(c, 409, 'Key conflicts with an existing file or folder');
    }
    throw err;
  }
  return c.body(null, 200, { ETag: `"${md5}"`, 'Cache-Control': 'no-store' });
}

async function receivePart(c: Context, storage: LocalStorage, maxPartBytes: number, reserveBytes: number): Promise<Response> {
  const url = new URL(c.req.url);
  const key = keyFromPath(url.pathname);
  if (key === null) return problem(c, 400, 'Invalid storage key');
  const access = storage.authorizePart(key, url.searchParams);
  if (!access.allowed) return problem(c, 403, access.detail);

  const size = contentLength(c);
  if (size === null) return problem(c, 411, 'Content-Length is required');
  // The URL binds the part's size: refused before a byte is read, so no oversized part is ever kept.
  // (A body that ends before its Content-Length is refused by receivePart, and its bytes removed.)
  if (size > access.partSize) {
    return problem(
      c,
      413,
      `Part ${access.partNumber} is ${access.partSize} bytes (part_size, the last part the remainder); this body has ${size}`,
    );
  }
  if (size < access.partSize) {
    return problem(
      c,
      400,
      `Part ${access.partNumber} must be exactly ${access.partSize} bytes (part_size, the last part the remainder); this body has ${size}`,
    );
  }
  if (size > maxPartBytes) return problem(c, 413, `Part larger than ${maxPartBytes} bytes`);
  const full = await refuseWhenFull(c, storage, `part ${access.partNumber} (${size} bytes)`, size, reserveBytes);
  if (full) return full;
  try {
    const etag = await storage.receivePart(key, access.uploadId, access.partNumber, requestBody(c), size);
    return c.body(null, 200, { ETag: `"${etag}"`, 'Cache-Control': 'no-store' });
  } catch (err) {
    if (err instanceof ObjectSizeMismatch) return problem(c, 400, 'Body length does not match Content-Length');
    if (err instanceof UploadNotFound) return problem(c, 404, 'Upload not found');
    if (err instanceof MultipartConflict) return problem(c, 409, err.message);
    if (isOutOfSpace(err)) return outOfSpace(c, `part ${access.partNumber} (${size} bytes)`);
    throw err;
  }
}

/** The hand-off PUT of a runner (handoff.ts): the output is already on this filesystem, so no space check. */
async function adoptHandoff(
  c: Context,
  storage: LocalStorage,
  key: string,
  name: string,
  contentType: string,
  maxUploadBytes: number,
): Promise<Response> {
  const sizeText = c.req.header(HANDOFF_SIZE_HEADER) ?? '';
  if (!/^[0-9]{1,16}$/.test(sizeText)) return problem(c, 400, `${HANDOFF_SIZE_HEADER} is required with ${HANDOFF_HEADER}`);
  const size = Number(sizeText);
  if (size > maxUploadBytes) return problem(c, 413, `File larger than ${maxUploadBytes} bytes`);
  try {
    await storage.adoptHandoff(key, name, size, contentType);
  } catch (err) {
    if (err instanceof HandoffRefused) return problem(c, 400, err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOTEMPTY' || code === 'EEXIST') {
      return problem(c, 409, 'Key conflicts with an existing file or folder');
    }
    if (isOutOfSpace(err)) return outOfSpace(c, `the file (${size} bytes)`);
    throw err;
  }
  return c.body(null, 200, { 'Cache-Control': 'no-store' });
}

/**
 * 507 at once, before a byte is read, when `size` bytes would not fit with `reserveBytes` left over
 * (room kept for the database and the work in progress); null when they fit.
 */
async function refuseWhenFull(
  c: Context,
  storage: LocalStorage,
  what: string,
  size: number,
  reserveBytes: number,
): Promise<Response | null> {
  const free = await storage.freeBytes();
  if (size + reserveBytes <= free) return null;
  return outOfSpace(c, `${what}: ${free} bytes are free, ${reserveBytes} of them kept in reserve`);
}

/** 507 Insufficient Storage: the disk is full; nothing was stored (a partly written part counts as not sent). */
function outOfSpace(c: Context, what: string): Response {
  return c.json({ detail: `The service ran out of disk space and could not store ${what}; try again later` }, 507, {
    'Cache-Control': 'no-store',
    'Retry-After': String(OUT_OF_SPACE_RETRY_SECONDS),
  });
}

/** The declared body size; null when absent or malformed (chunked uploads are refused). */
function contentLength(c: Context): number | null {
  const header = c.req.header('content-length');
  return header !== undefined && /^[0-9]{1,16}$/.test(header) ? Number(header) : null;
}

/**
 * The body as a Node stream: on @hono/node-server, the request itself, untouched so far (reading
 * c.req.raw.body would wrap it in a web stream and back, which halved upload throughput).
 */
function requestBody(c: Context): Readable {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  if (incoming instanceof IncomingMessage && !incoming.readableDidRead) return incoming;
  return c.req.raw.body ? Readable.fromWeb(c.req.raw.body as NodeReadableStream<Uint8Array>) : Readable.from([]);
}

/** The storage key of a request path, or null when it is not a valid key. */
export function keyFromPath(pathname: string): string | null {
  if (!pathname.startsWith(ROUTE_PREFIX)) return null;
  try {
    const key = pathname
      .slice(ROUTE_PREFIX.length)
      .split('/')
      .map((s) => decodeURIComponent(s))
      .join('/');
    assertValidKey(key);
    return key;
  } catch {
    return null;
  }
}

/**
 * One range of `bytes=a-b`, `bytes=a-` or `bytes=-n`, clamped to the size. Anything else (other
 * units, several ranges, malformed) is ignored and the whole file served, as RFC 9110 allows.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (header === undefined || size === 0) return undefined;
  const match = /^bytes=([0-9]*)-([0-9]*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffixLength = Number(match[2]);
    if (suffixLength === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffixLength), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? Infinity : Number(match[2]);
  if (end < start) return undefined; // invalid, e.g. bytes=5-3
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}

/** `inline` with an ASCII fallback name and the exact UTF-8 name (RFC 6266 / 8187). */
export function inlineDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  return `inline; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

function problem(c: Context, status: 400 | 403 | 404 | 409 | 411 | 413, detail: string): Response {
  return c.json({ detail }, status, { 'Cache-Control': 'no-store' });
}
