import type { Readable } from 'node:stream';

/** Byte range, inclusive on both ends, as in an HTTP Range header. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface ObjectInfo {
  size: number;
  contentType: string;
}

/**
 * Object storage for media. Keys are relative, '/'-separated, and end in the file's name so that
 * every URL the service hands out ends in the file name (the spec requires it for inputs).
 * Backends: local folder (embedded mode) and S3. Every backend passes core/storage/testing/storage-contract.ts.
 */
export interface Storage {
  /** Stores a stream of known size. Replaces an existing object atomically. */
  put(key: string, body: Readable, opts: { size: number; contentType: string }): Promise<void>;
  /** Stores a local file; returns its size. */
  putFile(key: string, path: string, contentType: string): Promise<{ size: number }>;
  /** null when the object does not exist. */
  stat(key: string): Promise<ObjectInfo | null>;
  /** Streams an object (or a range of it). Rejects with StorageNotFound when missing. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  /** Removes an object; missing objects are not an error. */
  delete(key: string): Promise<void>;
  /** Removes every object whose key starts with prefix. */
  deletePrefix(prefix: string): Promise<void>;
  /** URL that serves the object without credentials (public files). */
  publicUrl(key: string): string;
  /** URL that serves the object for ttlSeconds without an API key (private files, runners). */
  presignGet(key: string, ttlSeconds: number): Promise<string>;
  /** URL that accepts one HTTP PUT of the whole object for ttlSeconds (runners upload outputs). */
  presignPut(key: string, ttlSeconds: number): Promise<string>;

  // Multipart uploads, S3 semantics: parts are numbered from 1, every part but the last is at least
  // 5 MiB, a PUT to a part URL answers an ETag header, and completion lists every part in order.
  /**
   * Starts a multipart upload of `key`; returns its upload id. `partBytes` (1 byte to 5 GiB) is the size
   * of every part but the last, as the spec's part_size: a backend may place part n at (n-1)·partBytes.
   */
  createMultipartUpload(key: string, contentType: string, partBytes: number): Promise<string>;
  /**
   * URL that accepts one HTTP PUT of part `partNumber` (1..10000) for ttlSeconds, without credentials,
   * whose body is exactly `partBytes` bytes: the size is bound into the signature, so a client cannot
   * park more bytes than the part may hold (S3 refuses a 0-byte binding; there the empty part is unbound).
   */
  presignUploadPart(key: string, uploadId: string, partNumber: number, ttlSeconds: number, partBytes: number): Promise<string>;
  /** Parts uploaded so far, by number, with their ETags and sizes. */
  listParts(key: string, uploadId: string): Promise<UploadedPart[]>;
  /**
   * Assembles the object from the listed parts. Rejects with MultipartError (and stores nothing) when a
   * part is missing, out of order, its ETag does not match the uploaded part, or a part but the last is
   * smaller than the minimum (the local backend: not exactly partBytes).
   */
  completeMultipartUpload(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<{ size: number }>;
  /**
   * When the upload last received a part's bytes; null when none arrived yet or the upload is unknown.
   * Idle uploads are cleaned up sooner than abandoned ones (FFOP_IDLE_UPLOAD_SECONDS).
   */
  lastUploadActivity(key: string, uploadId: string): Promise<Date | null>;
  /** Discards the upload and its parts. Unknown or finished uploads are not an error. */
  abortMultipartUpload(key: string, uploadId: string): Promise<void>;
  /** Ids of the uploads of exactly `key` that were started and neither completed nor aborted. */
  unfinishedUploads(key: string): Promise<string[]>;
}

export interface UploadedPart {
  partNumber: number;
  etag: string;
  size: number;
}

/** A multipart request the backend refuses; the message says which part and why. */
export class MultipartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MultipartError';
  }
}

/** The upload id is unknown, malformed, of another key, or already completed or aborted. */
export class UploadNotFound extends MultipartError {
  constructor() {
    super('upload not found');
    this.name = 'UploadNotFound';
  }
}

/** The upload exists but cannot take this request now or in this form; the message says why. */
export class MultipartConflict extends MultipartError {
  constructor(message: string) {
    super(message);
    this.name = 'MultipartConflict';
  }
}

export class StorageNotFound extends Error {
  constructor(key: string) {
    super(`object not found: ${key}`);
    this.name = 'StorageNotFound';
  }
}

/** Same ceiling as S3 presigned URLs and the spec's presigned_ttl_seconds. */
export const MAX_PRESIGN_TTL_SECONDS = 604800;

/** The streamed body did not have the announced size; nothing was stored. */
export class ObjectSizeMismatch extends Error {
  constructor(expected: number, got: string) {
    super(`object size mismatch: expected ${expected} bytes, got ${got}`);
    this.name = 'ObjectSizeMismatch';
  }
}
