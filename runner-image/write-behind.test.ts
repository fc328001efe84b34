import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFile, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWriteBehind, writeBack } from './write-behind.ts';

async function folder(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'write-behind-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A sync double that records the size of each file it is asked to write back. */
function recordingSync() {
  const sizes: number[] = [];
  return {
    sizes,
    sync: async (file: FileHandle) => {
      sizes.push((await file.stat()).size);
    },
  };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('a growing output is written back each time it has grown by the step, not before', async (t) => {
  const dir = await folder(t);
  const out = join(dir, 'out.mp4');
  const recorded = recordingSync();
  const behind = startWriteBehind([join(dir, 'not-yet.mp4'), out], { everyMs: 5, minBytes: 1000, sync: recorded.sync });
  await writeFile(out, Buffer.alloc(999));
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(recorded.sizes, [], 'less than the step: nothing yet');
  await appendFile(out, Buffer.alloc(1));
  await until(() => recorded.sizes.length === 1, 'the first sync');
  await appendFile(out, Buffer.alloc(500));
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(recorded.sizes, [1000], 'grown by less than the step since: no second sync');
  await appendFile(out, Buffer.alloc(500));
  await until(() => recorded.sizes.length === 2, 'the second sync');
  await behind.stop();
  assert.deepEqual(recorded.sizes, [1000, 2000]);
});

test('a FIFO or a link put in place of the output is never opened as a file', async (t) => {
  const dir = await folder(t);
  const fifo = join(dir, 'fifo.mp4');
  execFileSync('mkfifo', [fifo]);
  const target = join(dir, 'elsewhere.bin');
  await writeFile(target, Buffer.alloc(4096));
  const link = join(dir, 'link.mp4');
  await symlink(target, link);
  const recorded = recordingSync();
  const behind = startWriteBehind([fifo, link], { everyMs: 5, minBytes: 1, sync: recorded.sync });
  await new Promise((r) => setTimeout(r, 60));
  await behind.stop();
  assert.deepEqual(recorded.sizes, []);
  // writeBack on its own, as the upload calls it: no wait on the FIFO, nothing done through the link.
  assert.equal(await writeBack(fifo, recorded.sync), false);
  assert.equal(await writeBack(link, recorded.sync), false);
  assert.deepEqual(recorded.sizes, []);
});

test('stop waits for the sync under way, and no other starts after it', async (t) => {
  const dir = await folder(t);
  const out = join(dir, 'out.mp4');
  await writeFile(out, Buffer.alloc(100));
  let calls = 0;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const behind = startWriteBehind([out], {
    everyMs: 5,
    minBytes: 1,
    sync: async () => {
      calls++;
      await held;
    },
  });
  await until(() => calls === 1, 'the sync to start');
  let stopped = false;
  const stopping = behind.stop().then(() => (stopped = true));
  await appendFile(out, Buffer.alloc(100));
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(stopped, false, 'stop returned while a sync was under way');
  release();
  await stopping;
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(calls, 1);
});

test('a sync that fails is only a lost head start', async (t) => {
  const dir = await folder(t);
  const out = join(dir, 'out.mp4');
  await writeFile(out, Buffer.alloc(10));
  assert.equal(
    await writeBack(out, async () => {
      throw new Error('EIO');
    }),
    false,
  );
  assert.equal(await writeBack(join(dir, 'missing.mp4')), false);
  assert.equal(await writeBack(out), true, 'the real fdatasync');
});
