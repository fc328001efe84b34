import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { ObjectSizeMismatch } from './storage.ts';
import { WAITING_BYTES_LIMIT, writeBodyAt, writeStartAt } from './positioned-writes.ts';

/** A file of `size` zero bytes in a folder of its own, open for writing. */
async function fileFixture(size: number) {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-positioned-'));
  const path = join(dir, 'data');
  await writeFile(path, Buffer.alloc(size));
  const file = await open(path, 'r+');
  return { path, file, close: async () => (await file.close().catch(() => {}), await rm(dir, { recursive: true, force: true })) };
}

/** A file handle double that counts writev calls and answers each with only part of what it was given. */
function partialWritesFile(file: FileHandle) {
  const calls: number[] = [];
  const double = {
    writev: async (buffers: Buffer[], position: number) => {
      const given = buffers.reduce((n, b) => n + b.length, 0);
      calls.push(given);
      // At most 100,000 bytes per call, like a write the kernel cut short.
      const first = Buffer.concat(buffers).subarray(0, Math.min(given, 100_000));
      return { bytesWritten: (await file.write(first, 0, first.length, position)).bytesWritten, buffers };
    },
  } as unknown as FileHandle;
  return { double, calls };
}

test('a body lands at its position, chunk after chunk, each chunk seen in order', async () => {
  const f = await fileFixture(3000);
  try {
    const chunks = [randomBytes(700), randomBytes(300), randomBytes(1000)];
    const seen: Buffer[] = [];
    await writeBodyAt(f.file, 500, Readable.from(chunks), 2000, (c) => seen.push(c));
    const stored = await readFile(f.path);
    assert.deepEqual(stored.subarray(500, 2500), Buffer.concat(chunks));
    assert.deepEqual(stored.subarray(0, 500), Buffer.alloc(500), 'bytes before the position are untouched');
    assert.deepEqual(stored.subarray(2500), Buffer.alloc(500), 'bytes after it too');
    assert.deepEqual(seen, chunks);
  } finally {
    await f.close();
  }
});

test('chunks that arrive during a write go together in the next one; short writes are finished', async () => {
  const f = await fileFixture(1_000_000);
  try {
    const { double, calls } = partialWritesFile(f.file);
    const chunks = Array.from({ length: 40 }, () => randomBytes(16_384));
    await writeBodyAt(double, 10, Readable.from(chunks), 40 * 16_384);
    assert.deepEqual((await readFile(f.path)).subarray(10, 10 + 40 * 16_384), Buffer.concat(chunks));
    assert.ok(calls.length < 40, `writev calls: ${calls.length} for 40 chunks`);
  } finally {
    await f.close();
  }
});

test('a body longer or shorter than announced is refused', async () => {
  const f = await fileFixture(100);
  try {
    await assert.rejects(writeBodyAt(f.file, 0, Readable.from([Buffer.alloc(60), Buffer.alloc(60)]), 100), ObjectSizeMismatch);
    await assert.rejects(writeBodyAt(f.file, 0, Readable.from([Buffer.alloc(60)]), 100), ObjectSizeMismatch);
  } finally {
    await f.close();
  }
});

test("a failed write fails the body with the file's error, and reading stops", async () => {
  const f = await fileFixture(10);
  const readOnly = await open(f.path, 'r');
  try {
    let read = 0;
    const body = Readable.from(
      (function* () {
        for (let i = 0; i < 1000; i++, read++) yield Buffer.alloc(WAITING_BYTES_LIMIT / 4);
      })(),
    );
    await assert.rejects(writeBodyAt(readOnly, 0, body, 1000 * (WAITING_BYTES_LIMIT / 4)), { code: 'EBADF' });
    assert.ok(read < 1000, `chunks read: ${read}`);
  } finally {
    await readOnly.close();
    await f.close();
  }
});

test('reading waits while more than the limit waits behind a slow write', async () => {
  const f = await fileFixture(0);
  try {
    let release: () => void = () => {};
    let writes = 0;
    const slow = {
      writev: async (buffers: Buffer[]) => {
        writes++;
        await new Promise<void>((r) => (release = r));
        return { bytesWritten: buffers.reduce((n, b) => n + b.length, 0), buffers };
      },
    } as unknown as FileHandle;
    let read = 0;
    const chunk = Buffer.alloc(WAITING_BYTES_LIMIT / 8);
    const body = Readable.from(
      (function* () {
        for (let i = 0; i < 64; i++, read++) yield chunk;
      })(),
      { highWaterMark: 1 },
    );
    const done = writeBodyAt(slow, 0, body, 64 * chunk.length);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(writes, 1);
    // One chunk in the write, 8 waiting (the limit), one or two in the stream's buffer.
    assert.ok(read <= 12, `read ${read} chunks behind one slow write`);
    const releaser = setInterval(() => release(), 1);
    await done;
    clearInterval(releaser);
    assert.equal(read, 64);
  } finally {
    await f.close();
  }
});

test('the start of a body: its first bytes at the position, read no further; a body shorter than that is refused', async () => {
  const f = await fileFixture(1000);
  try {
    const chunks = [randomBytes(300), randomBytes(300), randomBytes(300), randomBytes(300)];
    let pulled = 0;
    const body = Readable.from(
      (function* () {
        for (const chunk of chunks) {
          pulled++;
          yield chunk;
        }
      })(),
      { highWaterMark: 1 }, // reads one chunk ahead at most
    );
    await writeStartAt(f.file, 100, body, 450);
    const stored = await readFile(f.path);
    assert.deepEqual(stored.subarray(100, 550), Buffer.concat(chunks).subarray(0, 450));
    assert.deepEqual(stored.subarray(550), Buffer.alloc(450), 'nothing past the start');
    assert.ok(pulled <= 3, `pulled ${pulled} chunks for 450 bytes`);
    assert.equal(body.destroyed, false, 'left to the caller to close');
    await assert.rejects(writeStartAt(f.file, 0, Readable.from([Buffer.alloc(60)]), 100), ObjectSizeMismatch);
  } finally {
    await f.close();
  }
});
