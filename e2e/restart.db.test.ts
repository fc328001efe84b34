// Restart safety: the service is killed (SIGKILL) while commands run and wait; after it starts again
// every command ends, none stays PROCESSING and none is lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabaseUrl } from '../core/db/testing/test-database.ts';
import { ApiClient, freePort, makeClip, startMediaServer, waitForFile } from './harness.ts';

const MAIN = fileURLToPath(new URL('../api/embedded/main.ts', import.meta.url));

function startProcess(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('listening on')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`service exited with ${code}: ${err}`)));
  });
}

/** Processes whose working folder is inside dir (runners and ffmpeg run in the data folder). */
async function processesIn(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => '');
    if (cwd.startsWith(dir + '/')) pids.push(Number(pid));
  }
  return pids;
}

test('kill -9 mid-run: running commands run again, queued ones run, nothing is lost', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ffop-restart-'));
  const db = await createTestDatabaseUrl();
  const port = await freePort();
  const env = {
    FFOP_PORT: String(port),
    FFOP_DATA_DIR: dataDir,
    FFOP_DATABASE_URL: db.url === 'pglite:memory' ? `pglite:${join(dataDir, 'db')}` : db.url,
    FFOP_LOG_LEVEL: 'warn',
    FFOP_LOCAL_MAX_VCPUS: '2',
    FFOP_WORK_DIR: join(dataDir, 'work'),
  };
  let child = await startProcess(env);
  try {
    const key = (await readFile(join(dataDir, 'initial-api-key'), 'utf8')).trim();
    const api = new ApiClient(`http://127.0.0.1:${port}`, key);
    const body = (n: number) => ({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=64x64:rate=10:duration=3 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: `r${n}.mp4` },
      vcpu_count: 2, // capacity 2: one runs, the others wait QUEUED
    });
    const ids = [await api.submit(body(1)), await api.submit(body(2)), await api.submit(body(3))];
    for (;;) {
      const r = await api.get(`/v1/commands/${ids[0]}`);
      if (r.body.processing_stage === 'FFMPEG_PROCESSING') break;
      assert.notEqual(r.body.status, 'FAILED', JSON.stringify(r.body));
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal((await api.get(`/v1/commands/${ids[1]}`)).body.status, 'QUEUED');

    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // The orphaned runner notices its parent is gone and stops ffmpeg.
    const until = Date.now() + 10_000;
    while ((await processesIn(dataDir)).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(await processesIn(dataDir), [], 'runner or ffmpeg left running after the service died');

    child = await startProcess(env);
    for (const id of ids) {
      const { record } = await api.waitForEnd(id, 60_000);
      assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
      assert.ok(record.output_files.out_1.duration > 2.5);
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('kill -9 during a store-file download: its temporary folder is removed at the next start, and the file is stored', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ffop-restart-'));
  const db = await createTestDatabaseUrl();
  const media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 1));
  const port = await freePort();
  const workDir = join(dataDir, 'work');
  const env = {
    FFOP_PORT: String(port),
    FFOP_DATA_DIR: dataDir,
    FFOP_DATABASE_URL: db.url === 'pglite:memory' ? `pglite:${join(dataDir, 'db')}` : db.url,
    FFOP_LOG_LEVEL: 'warn',
    FFOP_WORK_DIR: workDir,
    FFOP_ALLOW_ADDRESSES: media.allowEntry,
  };
  const storeFolders = async () => (await readdir(workDir).catch(() => [] as string[])).filter((n) => n.startsWith('file-'));
  let child = await startProcess(env);
  try {
    const key = (await readFile(join(dataDir, 'initial-api-key'), 'utf8')).trim();
    const api = new ApiClient(`http://127.0.0.1:${port}`, key);
    // The slow path trickles the file over about 3 s: the download is under way when the service dies.
    const stored = await api.post('/v1/files/store-file', { file_url: `${media.url}/slow/clip.mp4` });
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    while ((await storeFolders()).length === 0) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const leftBehind = await storeFolders();
    assert.equal(leftBehind.length, 1, 'the killed download left its folder');

    child = await startProcess(env);
    // The start removed it before any new download; the download starts over in a folder of its own.
    const file = await waitForFile(api, stored.body.file_id, 60_000);
    assert.equal(file.status, 'STORED', JSON.stringify(file));
    assert.ok(!(await readdir(workDir)).includes(leftBehind[0]), `${leftBehind[0]} is still in the work folder`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    await media.close();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});
