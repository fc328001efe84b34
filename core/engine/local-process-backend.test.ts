import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { test } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createLogger } from '../logger.ts';
import { LocalStorage } from '../storage/local-storage.ts';
import { storageFilesRoutes } from '../../api/routes/storage-files.ts';
import { collector, jobBackendContract, spec } from './testing/job-backend-contract.ts';
import { LocalProcessBackend } from './local-process-backend.ts';
import { RUNNER_ENV } from '../jobs/runner-contract.ts';

/** A local backend with a local storage served over HTTP, in a folder of its own. */
async function localBackendFixture(warmRunner: boolean, capacityVcpus = 2) {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-local-backend-'));
  // The storage's URLs need the server's port, so the routes are attached once it listens.
  let routes: ReturnType<typeof storageFilesRoutes> | null = null;
  const server = serve({
    fetch: (req) => (routes ? routes.fetch(req) : new Response(null, { status: 503 })),
    hostname: '127.0.0.1',
    port: 0,
  });
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as AddressInfo).port;
  const storage = new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: `http://127.0.0.1:${port}`, signingKey: 'k'.repeat(32) });
  routes = storageFilesRoutes(storage);
  const backend = new LocalProcessBackend({ logger: createLogger('silent'), workRoot: join(dir, 'work'), warmRunner, capacityVcpus });
  return {
    backend,
    storage,
    workRoot: join(dir, 'work'),
    close: async () => {
      await backend.close();
      await new Promise((r) => server.close(r));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

for (const warmRunner of [false, true]) {
  jobBackendContract(warmRunner ? 'local processes, with warm runners' : 'local processes', () => localBackendFixture(warmRunner));
}

/** Pids of this process's runner children working under `workRoot` (Linux: /proc/<pid>/task/<pid>/children). */
async function runnerPids(workRoot: string): Promise<number[]> {
  const children = (await readFile(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8'))
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  const runners: number[] = [];
  for (const pid of children) {
    // Read while nice(1) execs node, the environment comes back empty: read it again.
    let environ = '';
    for (let attempt = 0; attempt < 5 && environ === ''; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 10));
      environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    }
    if (environ.split('\0').includes(`${RUNNER_ENV.workRoot}=${workRoot}`)) runners.push(pid);
  }
  return runners;
}

for (const warmRunner of [false, true]) {
  const runners = warmRunner ? 'warm runners work on them, no process is started per job' : 'a runner process each';
  test(`jobs one after another: ${runners}`, async () => {
    const f = await localBackendFixture(warmRunner);
    const events = collector(f.backend);
    const seen = new Set<number>();
    try {
      for (let i = 0; i < 4; i++) {
        const { spec: s, ref } = await spec(
          f.storage,
          '-f lavfi -i testsrc=size=64x48:rate=10:duration=0.2 -c:v libx264 -preset ultrafast {{out_1}}',
        );
        await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 60, accountId: 'acct' });
        for (const pid of await runnerPids(f.workRoot)) seen.add(pid);
        assert.equal((await events.result(ref.name)).ok, true);
        await f.backend.deleteJob(ref.name);
      }
      if (warmRunner) assert.ok(seen.size <= 2, `runner processes seen: ${seen.size}`);
      else assert.equal(seen.size, 4);
    } finally {
      await f.close();
    }
  });
}

/** The nice value of every thread of a process (Linux: field 19 of /proc/<pid>/task/<tid>/stat). */
async function threadNiceness(pid: number): Promise<number[]> {
  const values: number[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => null);
    if (stat !== null) values.push(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return values;
}

test('runners, every thread of them and their session, run at a lower CPU priority than the service', async () => {
  const f = await localBackendFixture(true);
  try {
    const [ours] = await threadNiceness(process.pid);
    const { spec: s, ref } = await spec(f.storage, '-f lavfi -i testsrc=size=64x48:rate=10:duration=0.2 -c:v libx264 {{out_1}}');
    const events = collector(f.backend);
    await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 60, accountId: 'acct' });
    assert.equal((await events.result(ref.name)).ok, true);
    // The warm runner that did the job waits for the next one. (A spare just forked may not run node yet.)
    const runners = [];
    for (const pid of await runnerPids(f.workRoot)) {
      const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (command.startsWith(`${process.execPath}\0`) && command.includes('runner-image/main')) runners.push(pid);
    }
    assert.ok(runners.length > 0);
    for (const pid of runners) {
      const values = await threadNiceness(pid);
      assert.deepEqual(new Set(values), new Set([Math.min(19, ours + 10)]), `runner ${pid}'s threads: ${values.join(' ')}`);
      // Under autogroup scheduling its session (a group of its own) is ranked by the group's value.
      const group = await readFile(`/proc/${pid}/autogroup`, 'utf8').catch(() => null);
      if (group !== null) assert.match(group, / nice 10\n$/, `runner ${pid}'s session`);
    }
  } finally {
    await f.close();
  }
});

test('warm runners: jobs beside finishing ones reuse the runners kept, bursts after bursts', async () => {
  // Capacity 1: one job runs ffmpeg and one finishes beside it, plus the spare: 3 runners are kept.
  const f = await localBackendFixture(true, 1);
  const events = collector(f.backend);
  const seen = new Set<number>();
  try {
    for (let round = 0; round < 3; round++) {
      const jobs = await Promise.all([0, 1, 2].map(() => spec(f.storage, '-f lavfi -i testsrc=size=64x48:rate=10:duration=0.2 {{out_1}}')));
      for (const { spec: s, ref } of jobs) await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 60, accountId: 'acct' });
      for (const pid of await runnerPids(f.workRoot)) seen.add(pid);
      for (const { ref } of jobs) assert.equal((await events.result(ref.name)).ok, true);
      for (const { ref } of jobs) await f.backend.deleteJob(ref.name);
      await new Promise((r) => setTimeout(r, 100)); // the spare starts
      for (const pid of await runnerPids(f.workRoot)) seen.add(pid);
    }
    // The first burst starts 3 runners and a spare; later bursts take the kept ones (and one more spare each).
    assert.ok(seen.size <= 6, `runner processes seen: ${seen.size}`);
  } finally {
    await f.close();
  }
});

test('close returns only once every runner has exited, the one mid-job included: nothing writes into the work folder after it', async () => {
  const f = await localBackendFixture(true);
  const events = collector(f.backend);
  try {
    const { spec: s, ref } = await spec(f.storage, '-re -f lavfi -i testsrc=size=64x48:rate=10:duration=300 {{out_1}}', {
      timeoutSeconds: 600,
    });
    await f.backend.ensureJob({ ref, spec: s, vcpus: 1, deadlineSeconds: 600, accountId: 'acct' });
    // Poll for the state: ffmpeg is running once the runner reports its first progress (slow on a busy machine).
    const deadline = Date.now() + 240_000;
    while (!events.of(ref.name).some((e) => e.type === 'progress')) {
      assert.ok(Date.now() < deadline, `no progress: ${JSON.stringify(events.of(ref.name))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const pids = await runnerPids(f.workRoot);
    assert.ok(pids.length >= 1);
    await f.backend.close();
    for (const pid of pids) assert.equal(existsSync(`/proc/${pid}`), false, `runner ${pid} still exists after close`);
    // What close left stays as it is. (A runner stopped mid-job removes its folder on the way out; one
    // that took longer than the grace period to stop was killed and left it for the next start's sweep.)
    const listing = async () => (await readdir(f.workRoot, { recursive: true }).catch(() => [])).sort();
    const atClose = await listing();
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(await listing(), atClose);
  } finally {
    await f.close();
  }
});
