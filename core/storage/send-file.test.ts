import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { DestinationClosed, SEND_CHUNK_BYTES, sendFileRange } from './send-file.ts';

/**
 * A writable that keeps each chunk a millisecond before copying it, as a slow socket holds it: a
 * sender that reused a buffer before its write was flushed would change bytes still to be sent.
 */
class Collector extends Writable {
  readonly chunks: Buffer[] = [];
  constructor() {
    super({ highWaterMark: 1 }); // every write waits for the previous one, as a busy socket makes it
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error) => void): void {
    setTimeout(() => {
      this.chunks.push(Buffer.from(chunk));
      done();
    }, 1);
  }
}

/** A writable that compares each chunk with the bytes expected at its offset (a millisecond later, as Collector), keeping none. */
class Checker extends Writable {
  bytes = 0;
  readonly mismatches: number[] = [];
  readonly expected: (at: number, length: number) => Buffer;
  constructor(expected: (at: number, length: number) => Buffer) {
    super({ highWaterMark: 1 });
    this.expected = expected;
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error) => void): void {
    const at = this.bytes;
    this.bytes += chunk.length;
    setTimeout(() => {
      if (!chunk.equals(this.expected(at, chunk.length))) this.mismatches.push(at);
      done();
    }, 1);
  }
}

const mark = (at: number) => Buffer.from(`mark@${at}`.padEnd(16, '.'));

/** Bytes `at..at+length` of a sparse file with a 16-byte mark() written at each offset in `marks`. */
function sparseBytes(marks: number[], at: number, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (const m of marks) if (m + 16 > at && m < at + length) mark(m).copy(bytes, Math.max(0, m - at), Math.max(0, at - m));
  return bytes;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('sendFileRange', () => {
  let dir: string;
  let data: Buffer;
  let file: FileHandle;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'send-file-'));
    // Two and a half chunks: every range below crosses a reused buffer at least once.
    data = randomBytes(SEND_CHUNK_BYTES * 2 + SEND_CHUNK_BYTES / 2);
    await writeFile(join(dir, 'data.bin'), data);
    file = await open(join(dir, 'data.bin'));
  });
  after(async () => {
    await file?.close();
    await rm(dir, { recursive: true, force: true });
  });

  for (const [name, start, end] of [
    ['the whole file', 0, 'last'],
    ['the first bytes', 0, 9],
    ['a middle range across buffers', 1000, SEND_CHUNK_BYTES * 2 + 5],
    ['the last byte', 'last', 'last'],
    ['one byte', 12345, 12345],
  ] as const) {
    test(`sends exactly ${name}`, async () => {
      const last = data.length - 1;
      const range = { start: start === 'last' ? last : start, end: end === 'last' ? last : end };
      const out = new Collector();
      await sendFileRange(file, range, out);
      const sent = Buffer.concat(out.chunks);
      assert.equal(sent.length, range.end - range.start + 1);
      assert.equal(sha256(sent), sha256(data.subarray(range.start, range.end + 1)));
    });
  }

  test('a sparse file far larger than the buffers arrives whole, holes and data alike', async () => {
    const path = join(dir, 'sparse.bin');
    const size = 256 * SEND_CHUNK_BYTES;
    const marks = [0, SEND_CHUNK_BYTES - 3, 100 * SEND_CHUNK_BYTES + 7, size - 16];
    const sparse = await open(path, 'w+');
    try {
      await sparse.truncate(size);
      for (const at of marks) await sparse.write(mark(at), 0, 16, at);
      const out = new Checker((at, length) => sparseBytes(marks, at, length));
      await sendFileRange(sparse, { start: 0, end: size - 1 }, out);
      assert.equal(out.bytes, size);
      assert.deepEqual(out.mismatches, []);
    } finally {
      await sparse.close();
      await rm(path, { force: true });
    }
  });

  test('a file shorter than the range is an error, not a short success', async () => {
    const path = join(dir, 'short.bin');
    await writeFile(path, data.subarray(0, 100));
    const short = await open(path);
    try {
      await assert.rejects(sendFileRange(short, { start: 0, end: 199 }, new Collector()), /ends at byte 100/);
    } finally {
      await short.close();
    }
  });

  test('a destination closed half-way rejects with DestinationClosed', async () => {
    const out = new PassThrough({ highWaterMark: 1 }); // nobody reads it: writes wait until it closes
    const sending = sendFileRange(file, { start: 0, end: data.length - 1 }, out);
    setTimeout(() => out.destroy(), 20);
    await assert.rejects(sending, DestinationClosed);
  });

  test('a destination already closed rejects at once', async () => {
    const out = new PassThrough();
    out.destroy();
    await assert.rejects(sendFileRange(file, { start: 0, end: 9 }, out), DestinationClosed);
  });
});
