import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { oomKillCount } from './memory-cgroup.ts';

describe('oomKillCount', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ffop-oom-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test("reads cgroup v1's memory.oom_control", async () => {
    const file = join(dir, 'memory.oom_control');
    await writeFile(file, 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n');
    assert.equal(await oomKillCount([file]), 3);
  });

  test("falls through to cgroup v2's memory.events", async () => {
    const file = join(dir, 'memory.events');
    await writeFile(file, 'low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n');
    assert.equal(await oomKillCount([join(dir, 'missing'), file]), 1);
  });

  test('is null where no counter can be read', async () => {
    assert.equal(await oomKillCount([join(dir, 'missing')]), null);
  });
});
