import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { putFile } from './put-file.ts';

/** A put() that keeps what it was given. */
function recordingStorage() {
  const puts: { key: string; bytes: string; size: number; contentType: string }[] = [];
  return {
    puts,
    async put(key: string, body: Readable, opts: { size: number; contentType: string }) {
      const chunks: Buffer[] = [];
      for await (const chunk of body) chunks.push(chunk as Buffer);
      puts.push({ key, bytes: Buffer.concat(chunks).toString(), ...opts });
    },
  };
}

async function folder(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'put-file-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('a file is streamed through put() with its size and type', async (t) => {
  const path = join(await folder(t), 'a.txt');
  await writeFile(path, 'hello');
  const storage = recordingStorage();
  assert.deepEqual(await putFile(storage, 'k/a.txt', path, 'text/plain'), { size: 5 });
  assert.deepEqual(storage.puts, [{ key: 'k/a.txt', bytes: 'hello', size: 5, contentType: 'text/plain' }]);
});

test('a backend that stores the file without a copy is not sent its bytes; one that cannot gets them', async (t) => {
  const path = join(await folder(t), 'a.txt');
  await writeFile(path, 'hello');
  const storage = recordingStorage();
  const asked: string[] = [];
  const linked = await putFile(storage, 'k/a', path, 'text/plain', async (key, p, type) => {
    asked.push(`${key} ${p} ${type}`);
    return true;
  });
  assert.deepEqual(linked, { size: 5 });
  assert.deepEqual(asked, [`k/a ${path} text/plain`]);
  assert.equal(storage.puts.length, 0);
  assert.deepEqual(await putFile(storage, 'k/b', path, 'text/plain', async () => false), { size: 5 });
  assert.deepEqual(
    storage.puts.map((p) => [p.key, p.bytes]),
    [['k/b', 'hello']],
  );
});

test('only a regular file is stored', async (t) => {
  const dir = await folder(t);
  const storage = recordingStorage();
  let asked = false;
  const withoutCopy = async () => (asked = true);
  await assert.rejects(putFile(storage, 'k', dir, 'text/plain', withoutCopy), /not a regular file/);
  await assert.rejects(putFile(storage, 'k', join(dir, 'missing'), 'text/plain'), { code: 'ENOENT' });
  assert.equal(asked, false);
  assert.deepEqual(storage.puts, []);
});
