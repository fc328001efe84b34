// S3 storage backend (cluster mode), through the minio client against any S3-compatible server.
// Keys follow the same rules as the local backend's (keys.ts), so an object stored in one mode can be
// stored in the other. The bucket is private: files are read and written through presigned URLs.
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Client } from 'minio';
import type { ClientOptions } from 'minio';
import { assertValidKey, assertValidPrefix, encodeKeyForUrl } from './keys.ts';
import { contentTypeForFileName } from '../media/mime.ts';
import { normalizeContentType } from './content-types.ts';
import { MAX_PRESIGN_TTL_SECONDS, ObjectSizeMismatch } from './storage.ts';
import {
  assertValidUploadPartBytes,
  checkCompletion,
  DEFAULT_MIN_PART_BYTES,
  isValidPartBytes,
  isValidPartNumber,
  MAX_PART_NUMBER,
} from './multipart.ts';
import { awsEscape, presignS3Url } from './s3-presign.ts';
import { putFile } from './put-file.ts';
import type { ByteRange, ObjectInfo, Storage, UploadedPart } from './storage.ts';
import { MultipartError, StorageNotFound } from './storage.ts';

export interface S3StorageOptions {
  /** Origin of the S3 API, e.g. `https://s3.example.com` or `http://127.0.0.1:7070`. */
  endpoint: string;
  region: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  /** Base under which public/ keys are served (e.g. a CDN); default `${endpoint}/${bucket}`. */
  publicBaseUrl?: string;
  /**
   * Part size for put() of large objects: one part is held in memory at a time. put() of an object
   * up to this size is a single PUT. Default 16 MiB; at least 5 MiB (S3's minimum part).
   */
  partBytes?: number;
  /** Milliseconds since the epoch, the signing time of presigned URLs; injected by tests. */
  clock?: () => number;
}

const DEFAULT_PUT_PART_BYTES = 16 * 1024 * 1024;
// The minio client puts some ids into query strings unescaped (abort, upload part): only allow ids
// whose characters need no escaping. AWS, MinIO, Ceph and versitygw ids fit.
const UPLOAD_ID_PATTERN = /^[A-Za-z0-9._~-]{1,1024}$/;
// S3 error codes that mean "this multipart request is refused", as opposed to a server failure.
const MULTIPART_REFUSALS = new Set(['NoSuchUpload', 'InvalidPart', 'InvalidPartOrder', 'EntityTooSmall']);
const MISSING_OBJECT = new Set(['NoSuchKey', 'NotFound']);

/** Exposes listParts, which the minio client keeps protected. */
class PartsClient extends Client {
  listUploadedParts(bucket: string, key: string, uploadId: string) {
    return this.listParts(bucket, key, uploadId);
  }
}

export class S3Storage implements Storage {
  readonly bucket: string;
  readonly #client: PartsClient;
  readonly #publicBaseUrl: string;
  readonly #partBytes: number;
  readonly #clock: () => number;
  /** What part URLs are signed with (s3-presign.ts), the client being unable to sign Content-Length. */
  readonly #signer: { endpoint: string; region: string; accessKey: string; secretKey: string };

  constructor(options: S3StorageOptions) {
    const endpoint = new URL(options.endpoint);
    if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') {
      throw new Error(`S3 endpoint must be http(s): ${options.endpoint}`);
    }
    if (endpoint.pathname !== '/' || endpoint.search !== '' || endpoint.username !== '') {
      throw new Error(`S3 endpoint must be an origin without path or credentials: ${options.endpoint}`);
    }
    this.#partBytes = options.partBytes ?? DEFAULT_PUT_PART_BYTES;
    if (!Number.isSafeInteger(this.#partBytes) || this.#partBytes < DEFAULT_MIN_PART_BYTES) {
      throw new RangeError(`partBytes must be at least ${DEFAULT_MIN_PART_BYTES}`);
    }
    const clientOptions: ClientOptions = {
      endPoint: endpoint.hostname.replace(/^\[(.*)\]$/, '$1'),
      useSSL: endpoint.protocol === 'https:',
      region: options.region,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      // Path style works with every S3 server and needs no wildcard DNS.
      pathStyle: true,
      partSize: this.#partBytes,
    };
    if (endpoint.port !== '') clientOptions.port = Number(endpoint.port);
    this.#client = new PartsClient(clientOptions);
    this.bucket = options.bucket;
    this.#publicBaseUrl = (options.publicBaseUrl ?? `${endpoint.origin}/${encodeURIComponent(options.bucket)}`).replace(/\/+$/, '');
    this.#clock = options.clock ?? Date.now;
    this.#signer = { endpoint: endpoint.origin, region: options.region, accessKey: options.accessKey, secretKey: options.secretKey };
  }

  async put(key: string, body: Readable, opts: { size: number; contentType: string }): Promise<void> {
    assertValidKey(key);
    if (!Number.isSafeInteger(opts.size) || opts.size < 0) throw new RangeError(`invalid size ${opts.size}`);
    const contentType = normalizeContentType(opts.contentType);
    if (contentType === null) throw new TypeError(`invalid content type ${JSON.stringify(opts.contentType)}`);

    // One part size for the whole object, large enough to stay within 10000 parts.
    const partBytes = Math.max(this.#partBytes, Math.ceil(opts.size / MAX_PART_NUMBER / 1048576) * 1048576);
    const parts = exactParts(body, opts.size, partBytes);
    if (opts.size <= partBytes) {
      // Read to the end first, so a body of the wrong length is refused before anything is sent.
      let data: Buffer = Buffer.alloc(0);
      for await (const part of parts) data = part;
      await this.#client.putObject(this.bucket, key, data, data.length, { 'Content-Type': contentType });
      return;
    }
    await this.#putInParts(key, parts, contentType);
  }

  /**
   * A multipart upload of our own rather than minio's: minio's resumes any unfinished upload of the
   * same key, which could be a client's presigned upload in progress.
   */
  async #putInParts(key: string, parts: AsyncIterable<Buffer>, contentType: string): Promise<void> {
    const uploadId = await this.#client.initiateNewMultipartUpload(this.bucket, key, { 'Content-Type': contentType });
    try {
      assertUploadId(uploadId);
      const etags: { part: number; etag: string }[] = [];
      for await (const data of parts) {
        const part = etags.length + 1;
        const { etag } = await this.#client.uploadPart(
          {
            bucketName: this.bucket,
            objectName: key,
            uploadID: uploadId,
            partNumber: part,
            headers: { 'Content-Length': data.length, 'Content-MD5': createHash('md5').update(data).digest('base64') },
          },
          data,
        );
        etags.push({ part, etag });
      }
      await this.#client.completeMultipartUpload(this.bucket, key, uploadId, etags);
    } catch (err) {
      await this.#client.abortMultipartUpload(this.bucket, key, uploadId).catch(() => undefined);
      throw err;
    }
  }

  /** Through put() rather than fPutObject, which resumes unfinished uploads too (see #putInParts). */
  async putFile(key: string, path: string, contentType: string): Promise<{ size: number }> {
    return putFile(this, key, path, contentType);
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    assertValidKey(key);
    try {
      const info = await this.#client.statObject(this.bucket, key);
      const stored = info.metaData['content-type'] as unknown;
      const contentType = normalizeContentType(typeof stored === 'string' ? stored : null) ?? contentTypeForFileName(key);
      return { size: info.size, contentType };
    } catch (err) {
      if (MISSING_OBJECT.has(s3Code(err) ?? '')) return null;
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    assertValidKey(key);
    try {
      if (range === undefined) return await this.#client.getObject(this.bucket, key);
      if (!Number.isSafeInteger(range.start) || !Number.isSafeInteger(range.end) || range.start < 0 || range.start > range.end) {
        throw new RangeError(`invalid range ${range.start}-${range.end}`);
      }
      return await this.#client.getPartialObject(this.bucket, key, range.start, range.end - range.start + 1);
    } catch (err) {
      const code = s3Code(err);
      if (MISSING_OBJECT.has(code ?? '')) throw new StorageNotFound(key);
      if (code === 'InvalidRange') throw new RangeError(`range ${range?.start}-${range?.end} not satisfiable`);
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await this.#client.removeObject(this.bucket, key);
  }

  /** Plain string prefix, as S3 lists it. */
  async deletePrefix(prefix: string): Promise<void> {
    assertValidPrefix(prefix);
    let continuationToken: string | undefined;
    do {
      const page = await this.#listPage(prefix, continuationToken);
      if (page.keys.length > 0) await this.#removeObjects(page.keys);
      continuationToken = page.nextContinuationToken;
    } while (continuationToken !== undefined);
  }

  /**
   * One ListObjectsV2 page of keys. Not minio's listObjectsV2: it asks for URL-encoded keys and
   * decodes them whatever the answer says, and servers that ignore the request (versitygw 1.7)
   * then list 'a+b' as 'a b'. Keys are plain XML text here (they hold no control characters).
   */
  async #listPage(prefix: string, continuationToken?: string): Promise<{ keys: string[]; nextContinuationToken?: string }> {
    let query = `list-type=2&max-keys=1000&prefix=${awsEscape(prefix)}`;
    if (continuationToken !== undefined) query += `&continuation-token=${awsEscape(continuationToken)}`;
    const res = await this.#client.makeRequestAsync({ method: 'GET', bucketName: this.bucket, query }, '', [200]);
    const xml = await readText(res);
    const urlEncoded = xmlText(xml, 'EncodingType')[0] === 'url';
    const keys = [...xml.matchAll(/<Contents>[\s\S]*?<\/Contents>/g)].map((contents) => {
      const [key] = xmlText(contents[0], 'Key');
      if (key === undefined) throw new Error('S3 listing without a Key');
      return urlEncoded ? decodeURIComponent(key.replace(/\+/g, ' ')) : key;
    });
    const truncated = xmlText(xml, 'IsTruncated')[0] === 'true';
    const [next] = xmlText(xml, 'NextContinuationToken');
    if (truncated && next === undefined) throw new Error('S3 listing truncated without a continuation token');
    return { keys, nextContinuationToken: truncated ? next : undefined };
  }

  async #removeObjects(names: string[]): Promise<void> {
    const results = await this.#client.removeObjects(this.bucket, names);
    const failed = results.find((result) => result?.Error !== undefined);
    if (failed?.Error) {
      throw new Error(`could not delete ${failed.Error.Key}: ${failed.Error.Code} ${failed.Error.Message}`);
    }
  }

  publicUrl(key: string): string {
    assertValidKey(key);
    return `${this.#publicBaseUrl}/${encodeKeyForUrl(key)}`;
  }

  presignGet(key: string, ttlSeconds: number): Promise<string> {
    return this.#presign('GET', key, ttlSeconds, {});
  }

  presignPut(key: string, ttlSeconds: number): Promise<string> {
    return this.#presign('PUT', key, ttlSeconds, {});
  }

  async #presign(method: 'GET' | 'PUT', key: string, ttlSeconds: number, query: Record<string, string>): Promise<string> {
    assertValidKey(key);
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_PRESIGN_TTL_SECONDS) {
      throw new RangeError(`presign ttl must be an integer in 1..${MAX_PRESIGN_TTL_SECONDS}, got ${ttlSeconds}`);
    }
    return this.#client.presignedUrl(method, this.bucket, key, ttlSeconds, query, new Date(this.#clock()));
  }

  // ---- multipart uploads ----

  /** `partBytes` is checked only: S3 takes parts of any size (the URLs bind each one's). */
  async createMultipartUpload(key: string, contentType: string, partBytes: number): Promise<string> {
    assertValidKey(key);
    assertValidUploadPartBytes(partBytes);
    const type = normalizeContentType(contentType);
    if (type === null) throw new TypeError(`invalid content type ${JSON.stringify(contentType)}`);
    const uploadId = await this.#client.initiateNewMultipartUpload(this.bucket, key, { 'Content-Type': type });
    assertUploadId(uploadId);
    return uploadId;
  }

  /**
   * Signs `content-length` with the part's size, so the server refuses any other body (403
   * SignatureDoesNotMatch). Not for an empty part: SigV4 servers built on the AWS SDK (versitygw) leave a
   * zero Content-Length out of the signed headers, so such a URL would never match; that one part
   * (of an empty file) stays bounded only by S3's 5 GiB part limit until the upload is cleaned up.
   */
  async presignUploadPart(key: string, uploadId: string, partNumber: number, ttlSeconds: number, partBytes: number): Promise<string> {
    assertValidKey(key);
    if (!isUploadId(uploadId)) throw new MultipartError('upload not found');
    if (!isValidPartNumber(partNumber)) throw new RangeError(`part number must be an integer in 1..10000, got ${String(partNumber)}`);
    if (!isValidPartBytes(partBytes)) throw new RangeError(`part size must be an integer in 0..5 GiB, got ${String(partBytes)}`);
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_PRESIGN_TTL_SECONDS) {
      throw new RangeError(`presign ttl must be an integer in 1..${MAX_PRESIGN_TTL_SECONDS}, got ${ttlSeconds}`);
    }
    return presignS3Url({
      ...this.#signer,
      method: 'PUT',
      bucket: this.bucket,
      key,
      query: { partNumber: String(partNumber), uploadId },
      headers: partBytes > 0 ? { 'content-length': String(partBytes) } : {},
      expiresSeconds: ttlSeconds,
      date: new Date(this.#clock()),
    });
  }

  async listParts(key: string, uploadId: string): Promise<UploadedPart[]> {
    assertValidKey(key);
    if (!isUploadId(uploadId)) throw new MultipartError('upload not found');
    try {
      const parts = await this.#client.listUploadedParts(this.bucket, key, uploadId);
      return parts
        .map((part) => ({ partNumber: part.part, etag: `"${part.etag}"`, size: part.size }))
        .sort((a, b) => a.partNumber - b.partNumber);
    } catch (err) {
      throw asMultipartError(err);
    }
  }

  async lastUploadActivity(key: string, uploadId: string): Promise<Date | null> {
    assertValidKey(key);
    if (!isUploadId(uploadId)) return null;
    let parts;
    try {
      parts = await this.#client.listUploadedParts(this.bucket, key, uploadId);
    } catch (err) {
      if (s3Code(err) === 'NoSuchUpload') return null;
      throw err;
    }
    const times = parts.map((part) => part.lastModified?.getTime() ?? NaN).filter((t) => Number.isFinite(t));
    return times.length > 0 ? new Date(Math.max(...times)) : null;
  }

  async completeMultipartUpload(
    key: string,
    uploadId: string,
    requested: { partNumber: number; etag: string }[],
  ): Promise<{ size: number }> {
    // Checked here first, so every backend refuses the same requests with the same messages.
    const parts = checkCompletion(requested, await this.listParts(key, uploadId), DEFAULT_MIN_PART_BYTES);
    try {
      await this.#client.completeMultipartUpload(
        this.bucket,
        key,
        uploadId,
        parts.map((part) => ({ part: part.partNumber, etag: part.etag })),
      );
    } catch (err) {
      throw asMultipartError(err);
    }
    return { size: parts.reduce((sum, part) => sum + part.size, 0) };
  }

  /** ListMultipartUploads by prefix (the key itself), keeping the key's own (as #listPage, not the minio client's listing). */
  async unfinishedUploads(key: string): Promise<string[]> {
    assertValidKey(key);
    const ids: string[] = [];
    let marker: { keyMarker: string; uploadIdMarker: string } | undefined;
    do {
      let query = `uploads&max-uploads=1000&prefix=${awsEscape(key)}`;
      if (marker) query += `&key-marker=${awsEscape(marker.keyMarker)}&upload-id-marker=${awsEscape(marker.uploadIdMarker)}`;
      const res = await this.#client.makeRequestAsync({ method: 'GET', bucketName: this.bucket, query }, '', [200]);
      const page = uploadsPage(await readText(res));
      ids.push(...page.uploads.filter((u) => u.key === key).map((u) => u.uploadId));
      marker = page.next;
    } while (marker !== undefined);
    return ids.sort();
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    assertValidKey(key);
    if (!isUploadId(uploadId)) return;
    try {
      await this.#client.abortMultipartUpload(this.bucket, key, uploadId);
    } catch (err) {
      if (s3Code(err) !== 'NoSuchUpload') throw err;
    }
  }
}

/** One ListMultipartUploads page's uploads, and where the next page starts when there is one. */
function uploadsPage(xml: string): { uploads: { key: string; uploadId: string }[]; next?: { keyMarker: string; uploadIdMarker: string } } {
  const urlEncoded = xmlText(xml, 'EncodingType')[0] === 'url';
  const uploads = [...xml.matchAll(/<Upload>[\s\S]*?<\/Upload>/g)].map((upload) => {
    const [key] = xmlText(upload[0], 'Key');
    const [uploadId] = xmlText(upload[0], 'UploadId');
    if (key === undefined || uploadId === undefined) throw new Error('S3 upload listing without a Key or UploadId');
    return { key: urlEncoded ? decodeURIComponent(key.replace(/\+/g, ' ')) : key, uploadId };
  });
  if (xmlText(xml, 'IsTruncated')[0] !== 'true') return { uploads };
  const [keyMarker] = xmlText(xml, 'NextKeyMarker');
  const [uploadIdMarker] = xmlText(xml, 'NextUploadIdMarker');
  if (keyMarker === undefined || uploadIdMarker === undefined) throw new Error('S3 upload listing truncated without markers');
  return { uploads, next: { keyMarker, uploadIdMarker } };
}

/**
 * The body cut into parts of `partBytes` (the last one shorter; one empty part for an empty body).
 * Fails with ObjectSizeMismatch as soon as the body proves longer or shorter than `size`.
 */
async function* exactParts(body: Readable, size: number, partBytes: number): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let seen = 0;
  for await (const chunk of body) {
    let data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    seen += data.length;
    if (seen > size) throw new ObjectSizeMismatch(size, `more than ${size}`);
    while (pendingBytes + data.length >= partBytes) {
      const take = partBytes - pendingBytes;
      pending.push(data.subarray(0, take));
      yield Buffer.concat(pending);
      pending = [];
      pendingBytes = 0;
      data = data.subarray(take);
    }
    if (data.length > 0) {
      pending.push(data);
      pendingBytes += data.length;
    }
  }
  if (seen !== size) throw new ObjectSizeMismatch(size, String(seen));
  if (pendingBytes > 0 || size === 0) yield Buffer.concat(pending);
}

async function readText(stream: AsyncIterable<unknown>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** The text of every `<tag>` element in `xml` (flat elements without attributes, as S3 writes them). */
function xmlText(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((match) =>
    match[1].replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (entity, name: string) => {
      if (name.startsWith('#x')) return String.fromCodePoint(parseInt(name.slice(2), 16));
      if (name.startsWith('#')) return String.fromCodePoint(Number(name.slice(1)));
      return XML_ENTITIES[name] ?? entity;
    }),
  );
}

function isUploadId(uploadId: unknown): uploadId is string {
  return typeof uploadId === 'string' && UPLOAD_ID_PATTERN.test(uploadId);
}

function assertUploadId(uploadId: string): void {
  if (!isUploadId(uploadId)) throw new Error(`S3 server returned an upload id this client cannot use: ${JSON.stringify(uploadId)}`);
}

function s3Code(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function asMultipartError(err: unknown): unknown {
  const code = s3Code(err);
  if (code === 'NoSuchUpload') return new MultipartError('upload not found');
  if (code !== undefined && MULTIPART_REFUSALS.has(code)) return new MultipartError((err as Error).message);
  return err;
}
