// The embedded service keeps its data private: at every start its folders become 0700 and their files
// 0600 (database, stored files, keys), also when storage and work folders live outside the data folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService } from './harness.ts';

/** Every path under `root` (root included) whose mode is not 0700 (folders) or 0600 (files). */
async function notPrivate(root: string): Promise<string[]> {
  const wrong: string[] = [];
  const check = async (path: string) => {
    const info = await stat(path);
    const want = info.isDirectory() ? 0o700 : 0o600;
    if (info.isDirectory() || info.isFile()) {
      if ((info.mode & 0o777) !== want) wrong.push(`${path} ${(info.mode & 0o777).toString(8)}`);
    }
  };
  await check(root);
  for (const name of await readdir(root, { recursive: true })) await check(join(root, name));
  return wrong;
}

/** chmod -R go+rwX, as an older version or a careless restore would leave things. */
async function loosen(root: string): Promise<void> {
  await chmod(root, 0o777);
  for (const name of await readdir(root, { recursive: true })) {
    const path = join(root, name);
    const info = await stat(path);
    if (info.isDirectory()) await chmod(path, 0o777);
    else if (info.isFile()) await chmod(path, 0o666);
  }
}

test(
  'attack surface: database, stored files and keys are private after every start, ' + 'storage and work outside the data folder too',
  async () => {
    const outside = await mkdtemp(join(tmpdir(), 'ffop-outside-'));
    const storageDir = join(outside, 'storage');
    const workDir = join(outside, 'work');
    const svc = await startService({ env: { FFOP_STORAGE_DIR: storageDir, FFOP_WORK_DIR: workDir } });
    try {
      const api = svc.client();
      const init = await api.post('/v1/files/init-upload', { filename: 'secret.txt', size_bytes: 6, is_private: true });
      const put = await fetch(init.body.upload_urls[0], { method: 'PUT', body: 'secret' });
      assert.equal(put.status, 200);
      const done = await api.post(`/v1/files/${init.body.file_id}/complete-upload`, {
        parts: [{ part_number: 1, etag: put.headers.get('etag') }],
      });
      assert.equal(done.status, 200, JSON.stringify(done.body));

      // The database folder exists when the database is PGlite (the suite also runs on PostgreSQL).
      const dataFolders = svc.service.database.driver === 'pglite' ? [join(svc.dataDir, 'db'), storageDir] : [storageDir];
      for (const folder of dataFolders) assert.deepEqual(await notPrivate(folder), [], `${folder} after the first start`);
      for (const path of [svc.dataDir, workDir]) assert.equal((await stat(path)).mode & 0o777, 0o700, path);
      for (const name of ['signing-key', 'initial-api-key']) assert.equal((await stat(join(svc.dataDir, name))).mode & 0o777, 0o600, name);

      await svc.stop();
      for (const folder of [svc.dataDir, outside]) await loosen(folder);
      await svc.restart();

      for (const folder of dataFolders) assert.deepEqual(await notPrivate(folder), [], `${folder} after a restart`);
      for (const path of [svc.dataDir, workDir]) assert.equal((await stat(path)).mode & 0o777, 0o700, path);
      for (const name of ['signing-key', 'initial-api-key']) assert.equal((await stat(join(svc.dataDir, name))).mode & 0o777, 0o600, name);
      assert.equal((await api.get(`/v1/files/${init.body.file_id}`)).status, 200, 'the service still works');
    } finally {
      await svc.close();
      await rm(outside, { recursive: true, force: true });
    }
  },
);
