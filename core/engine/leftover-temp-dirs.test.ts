import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { removeLeftoverTempDirs } from './leftover-temp-dirs.ts';

test("the engine's left-over temporary folders go, with what they hold; anything else in the work folder stays", async () => {
  const work = await mkdtemp(join(tmpdir(), 'ffop-leftovers-'));
  try {
    await mkdir(join(work, 'file-a1B2c3'));
    await writeFile(join(work, 'file-a1B2c3', 'clip.mp4'), 'half a download');
    await mkdir(join(work, 'playlist-x9'), { recursive: true });
    await mkdir(join(work, 'step-k3')); // a runner's (embedded mode): not the engine's
    await writeFile(join(work, 'file-not-a-folder'), 'x');
    const removed = await removeLeftoverTempDirs(work);
    assert.deepEqual(removed.sort(), ['file-a1B2c3', 'playlist-x9']);
    assert.deepEqual((await readdir(work)).sort(), ['file-not-a-folder', 'step-k3']);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});

test('a work folder that does not exist yet has nothing to remove', async () => {
  assert.deepEqual(await removeLeftoverTempDirs(join(tmpdir(), 'ffop-no-such-folder-' + process.pid)), []);
});
