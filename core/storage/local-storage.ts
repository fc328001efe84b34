// Local-folder storage backend (embedded mode). Layout under `root`:
//   objects/<key>  the bytes
//   meta/<key>     JSON sidecar {contentType}; mirrors the objects tree, so a key that cannot
//                  exist in objects/ (file/folder clash) cannot clash in meta/ either
//   tmp/           uploads in progress; renamed into place when complete (atomic replace)
//   tmp/handoff/   outputs runners moved here to be stored without a copy (adoptHandoff, handoff.ts)
//   uploads/<id>/  multipart uploads: upload.json {key, contentType, createdAt, partBytes}, data (every
//                  part written in place at (n-1)·partBytes) and per uploaded part <n>.part ("<ETag>
//                  <size>", the ETag being CRC-32 and size); completion renames data into place
// It signs its own URLs (url-signing.ts); api/routes/storage-files.ts serves them.
// Everything it creates is private to the service's user: files 0600, folders 0700.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, link, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Readable, Writable } from 'node:stream';
import { PRIVATE_DIR_MODE as DIR_MODE, PRIVATE_FILE_MODE as FILE_MODE } from '../data-permissions.ts';
import { assertValidUploadPartBytes, checkCompletion, DEFAULT_MIN_PART_BYTES, isValidPartBytes, isValidPartNumber } from './multipart.ts';
import type { ByteRange, ObjectInfo, Storage, UploadedPart } from './storage.ts';
import { MAX_PRESIGN_TTL_SECONDS, MultipartConflict, MultipartError, StorageNotFound, UploadNotFound } from './storage.ts';
import { UploadActivity } from './upload-activity.ts';
import { writeBodyAt } from './positioned-writes.ts';
import { assertValidKey, assertValidPrefix, encodeKeyForUrl, isPublicKey } from './keys.ts';
import { contentTypeForFileName } from '../media/mime.ts';
import { normalizeContentType } from './content-types.ts';
import { assertSigningKey, checkSignedQuery, signedQuery } from './url-signing.ts';
import { HANDOFF_NAME_PATTERN } from './handoff.ts';
import { freeBytes } from './out-of-space.ts';
import { putFile } from './put-file.ts';
import { sendFileRange } from './send-file.ts';
import type { SignatureCheck, SignedMethod, SignedRequest } from './url-signing.ts';

/** A hand-off PUT that names no usable file; the message says why. */
export class HandoffRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HandoffRefused';
  }
}

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
const UPLOAD_DATA = 'data';
const PART_SUFFIX = '.part';
/** S3's largest object. */
const MAX_UPLOAD_BYTES = 5 * 1024 ** 4;
/** Shared by every LocalStorage of this process (tests open several on one folder). */
const UPLOADS_IN_PROGRESS = new UploadActivity();

interface UploadRecord {
  key: string;
  contentType: string;
  createdAt: Date;
  /** null for an upload started before parts were written in place (it can only be aborted). */
  partBytes: number | null;
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
  /**
   * Writes the bytes (inclusive range, already checked against size; the whole file without one) to
   * `out` at disk speed (send-file.ts), without ending it; closes the file at the end, sent or not.
   */
  send(out: Writable, range?: ByteRange): Promise<void>;
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
    await this.#write(key, body, opts);
  }

  /** put() that also returns the MD5 hex of the bytes (the ETag of a PUT to a presigned URL). */
  async receiveObject(key: string, body: Readable, opts: { size: number; contentType: string }): Promise<string> {
    const md5 = createHash('md5');
    await this.#write(key, body, opts, (chunk) => md5.update(chunk));
    return md5.digest('hex');
  }

  async #write(key: string, body: Readable, opts: { size: number; contentType: string }, onChunk?: (chunk: Buffer) => void): Promise<void> {
    assertValidKey(key);
    if (!Number.isSafeInteger(opts.size) || opts.size < 0) throw new RangeError(`invalid size ${opts.size}`);
    const contentType = normalizeContentType(opts.contentType);
    if (contentType === null) throw new TypeError(`invalid content type ${JSON.stringify(opts.contentType)}`);

    await mkdir(this.#tmpDir, { recursive: true, mode: DIR_MODE });
    const tmpObject = join(this.#tmpDir, `${randomUUID()}.object`);
    try {
      // Opened before streaming so the file exists for the cleanup below, whatever fails.
      const file = await open(tmpObject, 'wx', FILE_MODE);
      try {
        await writeBodyAt(file, 0, body, opts.size, onChunk);
        await file.sync();
      } finally {
        await file.close();
      }
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
    return putFile(this, key, path, contentType, (k, p, type) => this.#link(k, p, type));
  }

  /** On the same filesystem, a second name for the file's bytes: stored without a second copy. */
  async #link(key: string, path: string, contentType: string): Promise<boolean> {
    assertValidKey(key);
    const type = normalizeContentType(contentType);
    if (type === null) throw new TypeError(`invalid content type ${JSON.stringify(contentType)}`);
    await mkdir(this.#tmpDir, { recursive: true, mode: DIR_MODE });
    const tmpObject = join(this.#tmpDir, `${randomUUID()}.object`);
    try {
      await link(path, tmpObject);
    } catch {
      return false; // EXDEV (another filesystem) and the like: copied instead
    }
    try {
      await chmod(tmpObject, FILE_MODE);
      await this.#publish(tmpObject, key, type);
    } finally {
      await rm(tmpObject, { force: true });
    }
    return true;
  }

  /** The folder runners move outputs into for adoptHandoff (handoff.ts); made on first use. */
  async handoffDir(): Promise<string> {
    const dir = join(this.#tmpDir, 'handoff');
    await mkdir(dir, { recursive: true, mode: DIR_MODE });
    return dir;
  }

  /**
   * Stores as `key` the file a runner moved into the hand-off folder as `name`; its bytes are not
   * copied. Refused (HandoffRefused) unless it is a regular file with one name and exactly `size`
   * bytes. The hand-off file is gone afterwards, stored or not.
   */
  async adoptHandoff(key: string, name: string, size: number, contentType: string): Promise<void> {
    assertValidKey(key);
    const type = normalizeContentType(contentType);
    if (type === null) throw new TypeError(`invalid content type ${JSON.stringify(contentType)}`);
    if (!HANDOFF_NAME_PATTERN.test(name)) throw new HandoffRefused('invalid hand-off name');
    const path = join(this.#tmpDir, 'handoff', name);
    try {
      let file: FileHandle;
      try {
        file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (err) {
        if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ELOOP') throw new HandoffRefused('no such hand-off file');
        throw err;
      }
      try {
        const info = await file.stat();
        // One name only: chown/chmod below must not change a file that lives on elsewhere.
        if (!info.isFile() || info.nlink !== 1) throw new HandoffRefused('the hand-off file is not a plain file');
        if (info.size !== size) throw new HandoffRefused(`the hand-off file has ${info.size} bytes, not ${size}`);
        // Written by ffmpeg as the step's uid: from now on the service's own, and private.
        if (process.getuid?.() === 0) await file.chown(process.getuid(), process.getgid!());
        await file.chmod(FILE_MODE);
        await file.sync();
      } finally {
        await file.close();
      }
      await this.#publish(path, key, type);
    } finally {
      await rm(path, { force: true });
    }
  }

  /** Bytes that may still be written on the storage's filesystem. */
  async freeBytes(): Promise<number> {
    await mkdir(this.root, { recursive: true, mode: DIR_MODE });
    return freeBytes(this.root);
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
        send: async (out, range) => {
          try {
            if (info.size > 0n) await sendFileRange(handle, range ?? { start: 0, end: Number(info.size) - 1 }, out);
          } finally {
            await handle.close();
          }
        },
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
  // Every part is written in place into the upload's one `data` file at (n-1)·partBytes, and its ETag
  // and size go to `<n>.part` once its bytes are synced. Completion then checks the listed parts and
  // renames `data` into place: no byte is copied or hashed again.

  async createMultipartUpload(key: string, contentType: string, partBytes: number): Promise<string> {
    assertValidKey(key);
    assertValidUploadPartBytes(partBytes);
    const type = normalizeContentType(contentType);
    if (type === null) throw new TypeError(`invalid content type ${JSON.stringify(contentType)}`);
    const uploadId = randomBytes(24).toString('base64url');
    const record = { key, contentType: type, createdAt: new Date(this.#clock()).toISOString(), partBytes };
    // Built in tmp/ and renamed, so an upload folder always has its record and its data file.
    const staging = join(this.#tmpDir, `${uploadId}.upload`);
    await mkdir(staging, { recursive: true, mode: DIR_MODE });
    try {
      await writeFile(join(staging, UPLOAD_RECORD), JSON.stringify(record), { flag: 'wx', mode: FILE_MODE });
      await writeFile(join(staging, UPLOAD_DATA), '', { flag: 'wx', mode: FILE_MODE });
      await mkdir(this.#uploadsDir, { recursive: true, mode: DIR_MODE });
      await rename(staging, join(this.#uploadsDir, uploadId));
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    return uploadId;
  }

  async presignUploadPart(key: string, uploadId: string, partNumber: number, ttlSeconds: number, partBytes: number): Promise<string> {
    if (typeof uploadId !== 'string' || !UPLOAD_ID_PATTERN.test(uploadId)) throw new UploadNotFound();
    if (!isValidPartNumber(partNumber)) throw new RangeError(`part number must be an integer in 1..10000, got ${String(partNumber)}`);
    if (!isValidPartBytes(partBytes)) throw new RangeError(`part size must be an integer in 0..5 GiB, got ${String(partBytes)}`);
    return this.#presign('PUT', key, ttlSeconds, { uploadId, partNumber, partSize: partBytes });
  }

  /**
   * Stores one part from a stream of exactly `size` bytes; returns its ETag. Replaces an earlier
   * upload of the same part (which stops counting as uploaded as soon as the new one starts). Rejects
   * with UploadNotFound, or MultipartConflict when the part is being sent by another request, the upload
   * is being completed, or the part does not fit the upload's part size.
   */
  async receivePart(key: string, uploadId: string, partNumber: number, body: Readable, size: number): Promise<string> {
    if (!isValidPartNumber(partNumber)) throw new RangeError(`invalid part number ${String(partNumber)}`);
    if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`invalid size ${size}`);
    const upload = await this.#readUpload(key, uploadId);
    if (upload === null) throw new UploadNotFound();
    const partBytes = inPlacePartBytes(upload);
    if (size > partBytes) {
      throw new MultipartConflict(`part ${partNumber} is ${size} bytes, more than the upload's part size of ${partBytes} bytes`);
    }
    const offset = (partNumber - 1) * partBytes;
    if (offset + size > MAX_UPLOAD_BYTES) throw new MultipartConflict(`part ${partNumber} ends beyond the largest object (5 TiB)`);

    const dir = join(this.#uploadsDir, uploadId);
    const done = UPLOADS_IN_PROGRESS.beginPart(dir, partNumber);
    const marker = join(dir, `${partNumber}${PART_SUFFIX}`);
    const tmpMarker = join(dir, `${partNumber}.${randomUUID()}.tmp`);
    try {
      // Not uploaded while its bytes change: a send that fails half-way leaves the part missing.
      await rm(marker, { force: true });
      const data = await open(join(dir, UPLOAD_DATA), constants.O_WRONLY | constants.O_NOFOLLOW);
      let crc = 0;
      try {
        await writeBodyAt(data, offset, body, size, (chunk) => (crc = crc32(chunk, crc)));
        await data.sync();
      } finally {
        await data.close();
      }
      const etag = partEtag(crc, size);
      await writeFile(tmpMarker, `${etag} ${size}`, { flag: 'wx', mode: FILE_MODE });
      await rename(tmpMarker, marker);
      return etag;
    } catch (err) {
      // The folder went away: the upload was aborted meanwhile.
      if (isMissing(err)) throw new UploadNotFound();
      throw err;
    } finally {
      done();
      await rm(tmpMarker, { force: true });
    }
  }

  async listParts(key: string, uploadId: string): Promise<UploadedPart[]> {
    const upload = await this.#readUpload(key, uploadId);
    if (upload === null) throw new UploadNotFound();
    inPlacePartBytes(upload);
    const dir = join(this.#uploadsDir, uploadId);
    const parts: UploadedPart[] = [];
    for (const name of await listDir(dir)) {
      const partNumber = Number(/^([1-9][0-9]{0,4})\.part$/.exec(name)?.[1]);
      if (!isValidPartNumber(partNumber)) continue;
      let marker: string;
      try {
        marker = await readFile(join(dir, name), 'utf8');
      } catch (err) {
        if (isMissing(err)) continue; // being replaced, or the upload aborted meanwhile
        throw err;
      }
      const [, etag, size] = /^([0-9a-f]{8}-[0-9a-f]{1,14}) ([0-9]{1,16})$/.exec(marker) ?? [];
      if (etag === undefined) throw new Error(`unreadable marker of part ${partNumber} of upload ${uploadId}`);
      parts.push({ partNumber, etag: `"${etag}"`, size: Number(size) });
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  async completeMultipartUpload(
    key: string,
    uploadId: string,
    requested: { partNumber: number; etag: string }[],
  ): Promise<{ size: number }> {
    const upload = await this.#readUpload(key, uploadId);
    if (upload === null) throw new UploadNotFound();
    const partBytes = inPlacePartBytes(upload);
    const dir = join(this.#uploadsDir, uploadId);
    const done = UPLOADS_IN_PROGRESS.beginCompletion(dir);
    try {
      const parts = checkCompletion(requested, await this.listParts(key, uploadId), this.#minPartBytes);
      // In place, part n starts at (n-1)·partBytes: a shorter part but the last would leave a gap.
      for (const part of parts.slice(0, -1)) {
        if (part.size !== partBytes) {
          throw new MultipartError(
            `part ${part.partNumber} is ${part.size} bytes; every part but the last must be ${partBytes} bytes (the upload's part size)`,
          );
        }
      }
      const size = (parts.length - 1) * partBytes + parts[parts.length - 1].size;
      const dataPath = join(dir, UPLOAD_DATA);
      const data = await open(dataPath, constants.O_WRONLY | constants.O_NOFOLLOW);
      try {
        await data.truncate(size); // bytes of parts beyond the listed ones
        await data.sync();
      } finally {
        await data.close();
      }
      await mkdir(this.#tmpDir, { recursive: true, mode: DIR_MODE });
      const tmpObject = join(this.#tmpDir, `${randomUUID()}.object`);
      await rename(dataPath, tmpObject);
      try {
        await this.#publish(tmpObject, key, upload.contentType);
      } catch (err) {
        // E.g. the key clashes with a folder: the upload keeps its bytes and stays usable.
        await rename(tmpObject, dataPath);
        throw err;
      }
      await rm(dir, { recursive: true, force: true, maxRetries: 3 });
      return { size };
    } catch (err) {
      if (isMissing(err) && !(err instanceof MultipartError)) throw new UploadNotFound();
      throw err;
    } finally {
      done();
    }
  }

  async lastUploadActivity(key: string, uploadId: string): Promise<Date | null> {
    const upload = await this.#readUpload(key, uploadId);
    if (upload === null) return null;
    // Every part is written into `data` (its mtime moves while a part arrives); created with the upload.
    const changed = await stat(join(this.#uploadsDir, uploadId, UPLOAD_DATA)).then(
      (s) => s.mtimeMs,
      () => null,
    );
    return changed === null || changed <= upload.createdAt.getTime() + 1000 ? null : new Date(changed);
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    if ((await this.#readUpload(key, uploadId)) === null) return;
    await rm(join(this.#uploadsDir, uploadId), { recursive: true, force: true, maxRetries: 3 });
  }

  /** Reads every upload's record: meant for the rare cleanup of a failed step's outputs, not for a hot path. */
  async unfinishedUploads(key: string): Promise<string[]> {
    assertValidKey(key);
    const ids: string[] = [];
    for (const uploadId of await listDir(this.#uploadsDir)) {
      if ((await this.#readUpload(key, uploadId)) !== null) ids.push(uploadId);
    }
    return ids.sort();
  }

  /** The upload's record; null when the id is malformed, unknown, or the upload is of another key. */
  async #readUpload(key: string | null, uploadId: string): Promise<UploadRecord | null> {
    if (key !== null) assertValidKey(key);
    if (typeof uploadId !== 'string' || !UPLOAD_ID_PATTERN.test(uploadId)) return null;
    let record: { key?: unknown; contentType?: unknown; createdAt?: unknown; partBytes?: unknown };
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
    const partBytes = isValidPartBytes(record.partBytes) && record.partBytes > 0 ? record.partBytes : null;
    return { key: record.key, contentType, createdAt, partBytes };
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

/**
 * A part's ETag: its CRC-32 and size in hex. Opaque to clients, as S3's are; not MD5, whose single
 * thread ran at 500 MiB/s here and cost uploads 40% of their throughput (CRC-32: 2 GiB/s).
 */
function partEtag(crc: number, size: number): string {
  return `${crc.toString(16).padStart(8, '0')}-${size.toString(16)}`;
}

function inPlacePartBytes(upload: UploadRecord): number {
  if (upload.partBytes !== null) return upload.partBytes;
  throw new MultipartConflict('this upload was started by an earlier version of the service that stored parts differently; start it again');
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
