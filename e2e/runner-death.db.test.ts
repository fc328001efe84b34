// Embedded mode: a runner that dies without a result (killed, out of memory, a crash) is not the
// command's fault: its step runs again once; a second death fails the command INTERRUPTED (issue 32, item 2).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startService, type ApiClient, type ServiceFixture } from './harness.ts';
import { RUNNER_MAIN } from '../core/jobs/runner-contract.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runner processes of this test process that have an ffmpeg below them: the ones running a step now. */
async function runnersRunningFfmpeg(): Promise<number[]> {
  const { stdout } = await promisify(execFile)('ps', ['-eo', 'pid=,ppid=,args=']);
  const procs = stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [pid, ppid, ...args] = line.trim().split(/\s+/);
      return { pid: Number(pid), ppid: Number(ppid), args: args.join(' ') };
    });
  const runners = procs.filter((p) => p.ppid === process.pid && p.args.includes(RUNNER_MAIN));
  const hasFfmpegBelow = (pid: number): boolean =>
    procs.some((p) => p.ppid === pid && (/(^|\/)ffmpeg( |$)/.test(p.args) || hasFfmpegBelow(p.pid)));
  return runners.filter((r) => hasFfmpegBelow(r.pid)).map((r) => r.pid);
}

/** Kills the runner of the command's step once ffmpeg runs in it; returns its pid. */
async function killRunnerWhileFfmpegRuns(api: ApiClient, id: string, notThese: number[] = []): Promise<number> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const record = (await api.get(`/v1/commands/${id}`)).body;
    assert.notEqual(record.status, 'FAILED', JSON.stringify(record));
    assert.notEqual(record.status, 'SUCCESS', 'the command ended before its runner could be killed');
    const pids = (await runnersRunningFfmpeg()).filter((pid) => !notThese.includes(pid));
    if (pids.length > 0) {
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      return pids[0];
    }
    if (Date.now() > deadline) throw new Error('no runner ran ffmpeg within 60 s');
    await sleep(100);
  }
}

describe('a runner that dies without a result', () => {
  let svc: ServiceFixture;
  before(async () => {
    svc = await startService();
  });
  after(async () => {
    await svc?.close();
  });

  // -re: in real time, so that there is time to kill its runner while ffmpeg runs.
  const slow = {
    ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=10:duration=4 -c:v libx264 -preset ultrafast {{out_1}}',
    output_files: { out_1: 'out.mp4' },
    vcpu_count: 1,
  };

  test('runs its step again once, and the command succeeds', async () => {
    const api = svc.client();
    const id = await api.submit(slow);
    await killRunnerWhileFfmpegRuns(api, id);
    const { record } = await api.waitForEnd(id, 120_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.ok(record.output_files.out_1, 'the output of the second run is stored');
  });

  test('dies twice: the command fails INTERRUPTED and says so', async () => {
    const api = svc.client();
    const id = await api.submit(slow);
    const first = await killRunnerWhileFfmpegRuns(api, id);
    await killRunnerWhileFfmpegRuns(api, id, [first]);
    const { record } = await api.waitForEnd(id, 120_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'INTERRUPTED');
    assert.match(record.error_message, /started 2 times and lost each time/);
    assert.match(record.error_message, /the runner exited \(SIGKILL\) without a result/);
  });
});
