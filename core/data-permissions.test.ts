import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { secureDataPermissions } from './data-permissions.ts';

let root: string;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ffop-perm-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

/** A folder tree as loose as PGlite and the old defaults left it: files 0666, folders 0755. */
async function looseTree(base: string, files: string[]): Promise<void> {
  await mkdir(base, { recursive: true, mode: 0o755 });
  await chmod(base, 0o755);
  for (const file of files) {
    const path = join(base, file);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, 'x');
    await chmod(path, 0o666);
  }
  for (const file of files) {
    for (let dir = join(base, file, '..'); dir.startsWith(base + '/'); dir = join(dir, '..')) await chmod(dir, 0o755);
  }
}

test('attack surface closed at start: data, database, storage and work folders 0700, every file in them 0600', async () => {
  const dataDir = join(root, 'data');
  const outside = join(root, 'elsewhere');
  await looseTree(dataDir, ['signing-key', 'initial-api-key', 'db/base/1/1259', 'db/global/pg_control', 'db/.lock']);
  // Storage and work outside the data folder, as FFOP_STORAGE_DIR / FFOP_WORK_DIR allow.
  await looseTree(join(outside, 'storage'), ['objects/private/acc/f/secret.mp4', 'meta/private/acc/f/secret.mp4', 'uploads/u1/1']);
  await looseTree(join(outside, 'work'), ['step-1/in.mp4']);
  // A symlink in storage must not be followed: its target keeps its mode.
  const target = join(root, 'not-ours.txt');
  await writeFile(target, 'x');
  await chmod(target, 0o644);
  await symlink(target, join(outside, 'storage', 'objects', 'link'));

  await secureDataPermissions({
    dataDir,
    databaseUrl: `pglite:${join(dataDir, 'db')}`,
    storage: 'local',
    storageDir: join(outside, 'storage'),
    workDir: join(outside, 'work'),
  });

  for (const dir of [
    'data',
    'data/db',
    'data/db/base',
    'data/db/base/1',
    'data/db/global',
    'elsewhere/storage',
    'elsewhere/storage/objects/private/acc/f',
    'elsewhere/storage/uploads/u1',
    'elsewhere/work',
  ]) {
    assert.equal(await modeOf(join(root, dir)), 0o700, dir);
  }
  for (const file of [
    'data/signing-key',
    'data/initial-api-key',
    'data/db/base/1/1259',
    'data/db/global/pg_control',
    'data/db/.lock',
    'elsewhere/storage/objects/private/acc/f/secret.mp4',
    'elsewhere/storage/meta/private/acc/f/secret.mp4',
    'elsewhere/storage/uploads/u1/1',
  ]) {
    assert.equal(await modeOf(join(root, file)), 0o600, file);
  }
  assert.equal(await modeOf(target), 0o644, 'a symlink target outside was changed');
  assert.ok((await lstat(join(outside, 'storage', 'objects', 'link'))).isSymbolicLink());
  // The work folder is closed at the top; step folders are the runner's.
  assert.equal(await modeOf(join(outside, 'work', 'step-1')), 0o755);
});

test('missing folders are created private; PostgreSQL and S3 leave no local database or storage folder', async () => {
  const dataDir = join(root, 'fresh');
  await secureDataPermissions({
    dataDir,
    databaseUrl: 'postgres://u@127.0.0.1:5432/db',
    storage: 's3',
    storageDir: join(dataDir, 'storage'),
    workDir: join(dataDir, 'work'),
  });
  assert.equal(await modeOf(dataDir), 0o700);
  assert.equal(await modeOf(join(dataDir, 'work')), 0o700);
  await assert.rejects(stat(join(dataDir, 'storage')), { code: 'ENOENT' });
  await assert.rejects(stat(join(dataDir, 'signing-key')), { code: 'ENOENT' });
});
