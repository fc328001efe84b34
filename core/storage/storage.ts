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
 * Backends: local folder (embedded mode) and S3. Every backend passes core/storage/contract.ts.
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
}

export class StorageNotFound extends Error {
  constructor(key: string) {
    super(`object not found: ${key}`);
    this.name = 'StorageNotFound';
  }
}
