// A start of embedded mode that fails late (here: its admin socket cannot be made) leaves nothing
// running behind it: no runner process, and the port is closed.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../core/config.ts';
import { createLogger } from '../core/logger.ts';
import { createTestDatabaseUrl } from '../core/db/testing/test-database.ts';
import { adminSocketPath } from '../api/cli/admin-socket.ts';
import { startEmbedded } from '../api/embedded/start-embedded.ts';

/** Pids of this process's children that run the runner. */
async function runnerChildren(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (ppid === process.pid && cmdline.includes('runner-image/main')) pids.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

test('a start that fails after the runners were started stops them again', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ffop-start-failure-'));
  const db = await createTestDatabaseUrl();
  try {
    // A folder that is not empty where the admin socket goes: making the socket fails, late in the start.
    await mkdir(join(adminSocketPath(dataDir), 'in-the-way'), { recursive: true });
    const config = loadConfig({
      FFOP_PORT: '0',
      FFOP_DATA_DIR: dataDir,
      FFOP_DATABASE_URL: db.url === 'pglite:memory' ? `pglite:${join(dataDir, 'db')}` : db.url,
    });
    assert.deepEqual(await runnerChildren(), [], 'no runner before the start');
    await assert.rejects(startEmbedded(config, createLogger('silent')));
    // The runners are killed at once; wait for the kernel to reap them (a deadline, not a sleep).
    const deadline = Date.now() + 30_000;
    let left = await runnerChildren();
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      left = await runnerChildren();
    }
    assert.deepEqual(left, [], 'no runner process left behind');
  } finally {
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
});
