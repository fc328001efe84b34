// Local-folder storage backend (embedded mode). Layout under `root`:
//   objects/<key>  the bytes
//   meta/<key>     JSON sidecar {contentType}; mirrors the objects tree, so a key that cannot
//                  exist in objects/ (file/folder clash) cannot clash in meta/ either
//   tmp/           uploads in progress; renamed into place when complete (atomic replace)
//   uploads/<id>/  multipart uploads: upload.json {key, contentType, createdAt}, then per part
//                  <partNumber> (the bytes) and <partNumber>.md5 (its MD5 hex, the part's ETag)
// It signs its own URLs (url-signing.ts); api/routes/storage-files.ts serves them.
// Everything it creates is private to the service's user: files 0600, folders 0700.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Hash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import type { Readable, TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PRIVATE_DIR_MODE as DIR_MODE, PRIVATE_FILE_MODE as FILE_MODE } from '../data-permissions.ts';
import { checkCompletion, DEFAULT_MIN_PART_BYTES, isValidPartBytes, isValidPartNumber, normalizeEtag } from './multipart.ts';
import type { ByteRange, ObjectInfo, Storage, UploadedPart } from './storage.ts';
import { MAX_PRESIGN_TTL_SECONDS, MultipartError, ObjectSizeMismatch, StorageNotFound } from './storage.ts';
import { assertValidKey, assertValidPrefix, encodeKeyForUrl, isPublicKey } from './keys.ts';
import { contentTypeForFileName } from '../media/mime.ts';
import { normalizeContentType } from './content-types.ts';
import { assertSigningKey, checkSignedQuery, signedQuery } from './url-signing.ts';
import type { SignatureCheck, SignedMethod, SignedRequest } from './url-signing.ts';

export type Access = { allowed: true; visibility: 'public' | 'signed' } | { allowed: false; detail: string };

export type PartAccess = { allowed: true; uploadId: string; partNumber: number; partSize: number } | { allowed: false; detail: string };

/** Query parameters of a part upload URL, named as in S3. */
export const UPLOAD_ID_PARAM = 'uploadId';
export const PART_NUMBER_PARAM = 'partNumber';
/** The part's exact size in bytes, bound by the signature. */
export const PART_SIZE_PARAM = 'X-Part-Size';
// 24 random bytes in base64url: unguessable, and safe as a folder name.
const UPLOAD_ID_PATTERN = /^[A-Za-z0-9_-]{32}$/;
const UPLOAD_RECORD = 'upload.json';

interface UploadRecord {
  key: string;
  contentType: string;
  createdAt: Date;
}

const REFUSAL_DETAILS: Record<Exclude<SignatureCheck, { ok: true }>['reason'], string> = {
  missing: 'A valid signed URL is required for this file',
  malformed: 'Malformed URL signature',
  invalid: 'Invalid URL signature',
  expired: 'The signed URL has expired',
};

/**
 * An opened object: size and type are those of the bytes this handle reads, even if the key is
 * replaced meanwhile. Call exactly one of stream() or close().
 */
export interface OpenObject {
  size: number;
  mtimeMs: number;
  /** Quoted entity tag from size and nanosecond mtime; changes when the key is replaced. */
  etag: string;
  contentType: string;
  /** Streams the bytes (inclusive range, already checked against size); closes the file at the end. */
  stream(range?: ByteRange): Readable;
  close(): Promise<void>;
}

export interface LocalStorageOptions {
  root: string;
  /** Origin (and optional path prefix) under which the app serves `/storage/...`. */
  publicBaseUrl: string;
  /** HMAC secret for URLs; use one dedicated to storage URLs. */
  signingKey: string | Uint8Array;
  /** Milliseconds since the epoch; injected by tests. */
  clock?: () => number;
  /** Minimum size of every multipart part but the last; S3's 5 MiB unless a test lowers it. */
  minPartBytes?: number;
}

export class LocalStorage implements Storage {
  readonly root: string;
  readonly #objectsDir: string;
  readonly #metaDir: string;
  readonly #tmpDir: string;
  readonly #uploadsDir: string;
  readonly #publicBaseUrl: string;
  readonly #signingKey: string | Uint8Array;
  readonly #clock: () => number;
  readonly #minPartBytes: number;

  constructor(options: LocalStorageOptions) {
    assertSigningKey(options.signingKey);
    this.root = resolve(options.root);
    this.#objectsDir = join(this.root, 'objects');
    this.#metaDir = join(this.root, 'meta');
    this.#tmpDir = join(this.root, 'tmp');
    this.#uploadsDir = join(this.root, 'uploads');
    this.#publicBaseUrl = options.publicBaseUrl.replace(/\/+$/, '');
    this.#signingKey = options.signingKey;
    this.#clock = options.clock ?? Date.now;
    this.#minPartBytes = options.minPartBytes ?? DEFAULT_MIN_PART_BYTES;
    if (!Number.isSafeInteger(this.#minPartBytes) || this.#minPartBytes < 1) {
      throw new RangeError(`invalid minPartBytes ${this.#minPartBytes}`);
    }
  }

  async put(key: string, body: Readable, opts: { size: number; contentType: string }): Promise<void> {
    assertValidKey(key);
    if (!Number.isSafeInteger(opts.size) || opts.size < 0) throw new RangeError(`invalid size ${opts.size}`);
    const contentType = normalizeContentType(opts.contentType);
    if (contentType === null) throw new TypeError(`invalid content type ${JSON.stringify(opts.contentType)}`);

    await mkdir(this.#tmpDir, { recursive: true, mode: DIR_MODE });
    const tmpObject = join(this.#tmpDir, `${randomUUID()}.object`);
    try {
      // Opened before streaming so the file exists for the cleanup below, whatever fails.
      const file = await open(tmpObject, 'wx', FILE_MODE);
      await pipeline(body, exactSize(opts.size), file.createWriteStream({ flush: true }));
      await this.#publish(tmpObject, key, contentType);
    } finally {
      await rm(tmpObject, { force: true });
    }
  }

  /** Moves a complete temp file into place as `key`, with its content-type sidecar. */
  async #publish(tmpObject: string, key: string, contentType: string): Promise<void> {
    const tmpMeta = join(this.#tmpDir, `${randomUUID()}.meta`);
    try {
      await writeFile(tmpMeta, JSON.stringify({ contentType }), { flag: 'wx', mode: FILE_MODE });
      // Sidecar first: a new key becomes visible only once its bytes are in place.
      await this.#moveInto(tmpMeta, join(this.#metaDir, key));
      await this.#moveInto(tmpObject, join(this.#objectsDir, key));
    } finally {
      await rm(tmpMeta, { force: true });
    }
  }

  async putFile(key: string, path: string, contentType: string): Promise<{ size: number }> {
    const info = await stat(path);
    if (!info.isFile()) throw new Error(`not a regular file: ${path}`);
    await this.put(key, createReadStream(path), { size: info.size, contentType });
    return { size: info.size };
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    assertValidKey(key);
    let info;
    try {
      info = await stat(join(this.#objectsDir, key));
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
    if (!info.isFile()) return null;
    return { size: info.size, contentType: await this.#readContentType(key) };
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const object = await this.open(key);
    if (object === null) throw new StorageNotFound(key);
    if (range !== undefined && !isSatisfiable(range, object.size)) {
      await object.close();
      throw new RangeError(`range ${range.start}-${range.end} not satisfiable for size ${object.size}`);
    }
    return object.stream(range && { start: range.start, end: Math.min(range.end, object.size - 1) });
  }

  /** Opens an object for serving; null when missing. Holding the file keeps its bytes readable. */
  async open(key: string): Promise<OpenObject | null> {
    assertValidKey(key);
    let handle: FileHandle;
    try {
      handle = await open(join(this.#objectsDir, key), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ELOOP') return null;
      throw err;
    }
    try {
      const info = await handle.stat({ bigint: true });
      if (!info.isFile()) {
        await handle.close();
        return null;
      }
      const contentType = await this.#readContentType(key);
      return {
        size: Number(info.size),
        mtimeMs: Number(info.mtimeMs),
        etag: `"${info.size.toString(16)}-${info.mtimeNs.toString(16)}"`,
        contentType,
        stream: (range) => handle.createReadStream(range ? { start: range.start, end: range.end } : {}),
        close: () => handle.close(),
      };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    for (const base of [this.#objectsDir, this.#metaDir]) {
      const path = join(base, key);
      try {
        await unlink(path);
      } catch (err) {
        // EISDIR: the key names a folder of other keys, not an object.
        if (!isMissing(err) && (err as NodeJS.ErrnoException).code !== 'EISDIR') throw err;
      }
      await removeEmptyParents(base, dirname(path));
    }
  }

  /** String-prefix semantics as in S3: 'a/b' removes 'a/b', 'a/b.mp4' and 'a/bc/d'. */
  async deletePrefix(prefix: string): Promise<void> {
    assertValidPrefix(prefix);
    const segments = prefix.split('/');
    const partialName = segments.pop() as string;

    for (const base of [this.#objectsDir, this.#metaDir]) {
      const dir = join(base, ...segments);
      if (partialName === '') {
        // 'a/b/' must not remove a file named 'a/b'.
        if (await isDirectory(dir)) await rm(dir, { recursive: true, force: true });
      } else {
        for (const name of await listDir(dir)) {
          if (name.startsWith(partialName)) await rm(join(dir, name), { recursive: true, force: true });
        }
      }
      await removeEmptyParents(base, partialName === '' ? dirname(dir) : dir);
    }
  }

  publicUrl(key: string): string {
    assertValidKey(key);
    return `${this.#publicBaseUrl}/storage/${encodeKeyForUrl(key)}`;
  }

  async presignGet(key: string, ttlSeconds: number): Promise<string> {
    return this.#presign('GET', key, ttlSeconds);
  }

  async presignPut(key: string, ttlSeconds: number): Promise<string> {
    return this.#presign('PUT', key, ttlSeconds);
  }

  /** Access rule for a request on `key`: public keys read freely, everything else needs a signature. */
  authorize(method: SignedMethod, key: string, query: URLSearchParams): Access {
    if (method === 'GET' && isPublicKey(key)) return { allowed: true, visibility: 'public' };
    const check = checkSignedQuery(this.#signingKey, { method, key }, query, this.#nowSeconds());
    if (check.ok) return { allowed: true, visibility: 'signed' };
    return { allowed: false, detail: REFUSAL_DETAILS[check.reason] };
  }

  /** Access rule for a part upload (a PUT carrying uploadId and partNumber): a signed part URL only. */
  authorizePart(key: string, query: URLSearchParams): PartAccess {
    const uploadId = query.get(UPLOAD_ID_PARAM) ?? '';
    const partText = query.get(PART_NUMBER_PARAM) ?? '';
    const partNumber = /^[1-9][0-9]{0,4}$/.test(partText) ? Number(partText) : NaN;
    const sizeText = query.get(PART_SIZE_PARAM) ?? '';
    const partSize = /^(0|[1-9][0-9]{0,15})$/.test(sizeText) ? Number(sizeText) : NaN;
    if (!UPLOAD_ID_PATTERN.test(uploadId) || !isValidPartNumber(partNumber)) {
      return { allowed: false, detail: 'Invalid uploadId or partNumber' };
    }
    // Part URLs made before sizes were signed carry none: they are refused like a bad signature.
    if (!isValidPartBytes(partSize)) return { allowed: false, detail: `Missing or invalid ${PART_SIZE_PARAM}` };
    const target = { method: 'PUT' as const, key, uploadId, partNumber, partSize };
    const check = checkSignedQuery(this.#signingKey, target, query, this.#nowSeconds());
    if (check.ok) return { allowed: true, uploadId, partNumber, partSize };
    return { allowed: false, detail: REFUSAL_DETAILS[check.reason] };
  }

  #presign(
    method: SignedMethod,
    key: string,
    ttlSeconds: number,
    part?: { uploadId: string; partNumber: number; partSize: number },
  ): string {
    assertValidKey(key);
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_PRESIGN_TTL_SECONDS) {
      throw new RangeError(`presign ttl must be an integer in 1..${MAX_PRESIGN_TTL_SECONDS}, got ${ttlSeconds}`);
    }
    const request: SignedRequest = { method, key, expires: this.#nowSeconds() + ttlSeconds, ...part };
    const partQuery = part
      ? `${new URLSearchParams({
          [UPLOAD_ID_PARAM]: part.uploadId,
          [PART_NUMBER_PARAM]: String(part.partNumber),
          [PART_SIZE_PARAM]: String(part.partSize),
        })}&`
      : '';
    return `${this.publicUrl(key)}?${partQuery}${signedQuery(this.#signingKey, request)}`;
  }

  // ---- multipart uploads ----

  async createMultipartUpload(key: string, contentType: string): Promise<string> {
    assertValidKey(key);
    const type = normalizeContentType(contentType);
    if (type === null) throw new TypeError(`invalid content type ${JSON.stringify(contentType)}`);
    const uploadId = randomBytes(24).toString('base64url');
    const record = { key, contentType: type, createdAt: new Date(this.#clock()).toISOString() };
    // Built in tmp/ and renamed, so an upload folder always has its record.
    const staging = join(this.#tmpDir, `${uploadId}.upload`);
    await mkdir(staging, { recursive: true, mode: DIR_MODE });
    try {
      await writeFile(join(staging, UPLOAD_RECORD), JSON.stringify(record), { flag: 'wx', mode: FILE_MODE });
      await mkdir(this.#uploadsDir, { recursive: true, mode: DIR_MODE });
      await rename(staging, join(this.#uploadsDir, uploadId));
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    return uploadId;
  }

  async presignUploadPart(key: string, uploadId: string, partNumber: number, ttlSeconds: number, partBytes: number): Promise<string> {
    if (typeof uploadId !== 'string' || !UPLOAD_ID_PATTERN.test(uploadId)) throw new MultipartError('upload not found');
    if (!isValidPartNumber(partNumber)) throw new RangeError(`part number must be an integer in 1..10000, got ${String(partNumber)}`);
    if (!isValidPartBytes(partBytes)) throw new RangeError(`part size must be an integer in 0..5 GiB, got ${String(partBytes)}`);
    return this.#presign('PUT', key, ttlSeconds, { uploadId, partNumber, partSize: partBytes });
  }

  /**
   * Stores one part from a stream of exactly `size` bytes; returns its MD5 hex. Replaces an earlier
   * upload of the same part. Rejects with MultipartError when the upload of `key` does not exist.
   */
  async receivePart(key: string, uploadId: string, partNumber: number, body: Readable, size: number): Promise<string> {
    if (!isValidPartNumber(partNumber)) throw new RangeError(`invalid part number ${String(partNumber)}`);
    if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`invalid size ${size}`);
    if ((await this.#readUpload(key, uploadId)) === null) throw new MultipartError('upload not found');
    const dir = join(this.#uploadsDir, uploadId);
    const tmpPart = join(dir, `${partNumber}.${randomUUID()}.tmp`);
    const tmpEtag = `${tmpPart}.md5`;
    try {
      const file = await open(tmpPart, 'wx', FILE_MODE);
      const md5 = createHash('md5');
      await pipeline(body, exactSize(size), hashing(md5), file.createWriteStream({ flush: true }));
      const etag = md5.digest('hex');
      await writeFile(tmpEtag, etag, { flag: 'wx', mode: FILE_MODE });
      // ETag first, so a listed part always has one; completion re-hashes the bytes anyway.
      await rename(tmpEtag, join(dir, `${partNumber}.md5`));
      await rename(tmpPart, join(dir, String(partNumber)));
      return etag;
    } catch (err) {
      // The folder went away: the upload was aborted or completed meanwhile.
      if (isMissing(err)) throw new MultipartError('upload not found');
      throw err;
    } finally {
      await rm(tmpPart, { force: true });
      await rm(tmpEtag, { force: true });
    }
  }

  async listParts(key: string, uploadId: string): Promise<UploadedPart[]> {
    if ((await this.#readUpload(key, uploadId)) === null) throw new MultipartError('upload not found');
    const dir = join(this.#uploadsDir, uploadId);
    const parts: UploadedPart[] = [];
    for (const name of await listDir(dir)) {
      if (!/^[1-9][0-9]{0,4}$/.test(name) || !isValidPartNumber(Number(name))) continue;
      try {
        const info = await stat(join(dir, name));
        const etag = (await readFile(join(dir, `${name}.md5`), 'utf8')).trim();
        parts.push({ partNumber: Number(name), etag: `"${etag}"`, size: info.size });
      } catch (err) {
        if (!isMissing(err)) throw err; // else: replaced or aborted meanwhile
      }
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  async completeMultipartUpload(
    key: string,
    uploadId: string,
    requested: { partNumber: number; etag: string }[],
  ): Promise<{ size: number }> {
    const upload = await this.#readUpload(key, uploadId);
    if (upload === null) throw new MultipartError('upload not found');
    const dir = join(this.#uploadsDir, uploadId);
    const parts = checkCompletion(requested, await this.listParts(key, uploadId), this.#minPartBytes);

    await mkdir(this.#tmpDir, { recursive: true, mode: DIR_MODE });
    const tmpObject = join(this.#tmpDir, `${randomUUID()}.object`);
    let size = 0;
    try {
      const out = await open(tmpObject, 'wx', FILE_MODE);
      const buffer = Buffer.allocUnsafe(4 * 1024 * 1024);
      try {
        for (const part of parts) size += await appendPart(out, join(dir, String(part.partNumber)), part, buffer);
        await out.sync();
      } finally {
        await out.close();
      }
      await this.#publish(tmpObject, key, upload.contentType);
    } finally {
      await rm(tmpObject, { force: true });
    }
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    return { size };
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    if ((await this.#readUpload(key, uploadId)) === null) return;
    await rm(join(this.#uploadsDir, uploadId), { recursive: true, force: true, maxRetries: 3 });
  }

  /** The upload's record; null when the id is malformed, unknown, or the upload is of another key. */
  async #readUpload(key: string | null, uploadId: string): Promise<UploadRecord | null> {
    if (key !== null) assertValidKey(key);
    if (typeof uploadId !== 'string' || !UPLOAD_ID_PATTERN.test(uploadId)) return null;
    let record: { key?: unknown; contentType?: unknown; createdAt?: unknown };
    try {
      record = JSON.parse(await readFile(join(this.#uploadsDir, uploadId, UPLOAD_RECORD), 'utf8')) as typeof record;
    } catch (err) {
      if (isMissing(err) || err instanceof SyntaxError) return null;
      throw err;
    }
    if (typeof record.key !== 'string' || (key !== null && record.key !== key)) return null;
    const contentType = normalizeContentType(typeof record.contentType === 'string' ? record.contentType : null);
    const createdAt = new Date(typeof record.createdAt === 'string' ? record.createdAt : NaN);
    if (contentType === null || Number.isNaN(createdAt.getTime())) return null;
    return { key: record.key, contentType, createdAt };
  }

  #nowSeconds(): number {
    return Math.floor(this.#clock() / 1000);
  }

  async #readContentType(key: string): Promise<string> {
    try {
      const meta = JSON.parse(await readFile(join(this.#metaDir, key), 'utf8')) as { contentType?: unknown };
      const type = normalizeContentType(typeof meta.contentType === 'string' ? meta.contentType : null);
      if (type !== null) return type;
    } catch {
      // Missing or unreadable sidecar: fall back to the extension.
    }
    return contentTypeForFileName(key);
  }

  /** rename() with its folder created; retried because delete() may prune that folder concurrently. */
  async #moveInto(from: string, to: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      await mkdir(dirname(to), { recursive: true, mode: DIR_MODE });
      try {
        await rename(from, to);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 5) throw err;
      }
    }
  }
}

function isSatisfiable(range: ByteRange, size: number): boolean {
  return (
    Number.isSafeInteger(range.start) &&
    Number.isSafeInteger(range.end) &&
    range.start >= 0 &&
    range.start <= range.end &&
    range.start < size
  );
}

/** Passes bytes through and fails unless exactly `size` bytes went by. */
function exactSize(size: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      seen += chunk.length;
      if (seen > size) done(new ObjectSizeMismatch(size, `more than ${size}`));
      else done(null, chunk);
    },
    flush(done: TransformCallback) {
      done(seen === size ? null : new ObjectSizeMismatch(size, String(seen)));
    },
  });
}

/**
 * Appends one part's bytes to `out` through `buffer`; checks they still hash to the part's ETag (the
 * part may have been replaced since it was listed). Returns the byte count.
 */
async function appendPart(out: FileHandle, path: string, part: UploadedPart, buffer: Buffer): Promise<number> {
  let input: FileHandle;
  try {
    input = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if (isMissing(err)) throw new MultipartError(`part ${part.partNumber} is missing`);
    throw err;
  }
  const md5 = createHash('md5');
  let size = 0;
  try {
    for (;;) {
      const { bytesRead } = await input.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      md5.update(chunk);
      size += bytesRead;
      await writeAll(out, chunk);
    }
  } finally {
    await input.close();
  }
  if (md5.digest('hex') !== normalizeEtag(part.etag)) {
    throw new MultipartError(`ETag of part ${part.partNumber} does not match the uploaded part`);
  }
  return size;
}

async function writeAll(out: FileHandle, data: Buffer): Promise<void> {
  for (let offset = 0; offset < data.length;) {
    offset += (await out.write(data, offset, data.length - offset)).bytesWritten;
  }
}

/** Passes bytes through, feeding them to `hash`. */
function hashing(hash: Hash): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isDirectory();
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}

/** Prunes folders left empty, from `dir` up to (not including) `base`. */
async function removeEmptyParents(base: string, dir: string): Promise<void> {
  while (dir !== base && dir.startsWith(base + '/')) {
    try {
      await rmdir(dir);
    } catch {
      return; // not empty, gone already, or raced with a put: stop here
    }
    dir = dirname(dir);
  }
}
