// Where a command's time went and where it waits (issue 32, item 3), through the public API in
// embedded mode: timings on the poll record and list items, queue_position and
// estimated_start_seconds while QUEUED, progress on list items.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PlansRepo } from '../core/accounts/plans-repo.ts';
import { makeClip, startMediaServer, startService, type ApiClient, type MediaServer, type ServiceFixture } from './harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` until `ok` holds of its value; the last value seen is in the failure. */
async function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await sleep(150);
  }
}

const PHASES = ['queued_seconds', 'download_seconds', 'ffmpeg_seconds', 'upload_seconds'] as const;

function assertAllNumbers(timings: Record<string, unknown>, where: string) {
  for (const phase of PHASES) {
    const value = timings[phase];
    assert.ok(typeof value === 'number' && value >= 0, `${where}.${phase} is ${JSON.stringify(value)}`);
  }
}

describe('timings and the queue, embedded mode', () => {
  let media: MediaServer;
  let svc: ServiceFixture;

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
    // One vCPU of capacity: a second command waits.
    svc = await startService({ allow: [media.allowEntry], env: { FFOP_LOCAL_MAX_VCPUS: '1' } });
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  // First: the estimate's "no start yet" needs a service where nothing else started in the last 15 minutes.
  test('with the capacity full: queue positions in order, a plan of higher priority ahead, the estimate, progress on list items', async () => {
    const pro = svc.client();
    // A plan below pro (priority 0, as free is) that allows fast polling.
    await new PlansRepo(svc.service.database.db).create({
      name: 'bulk',
      maxVcpus: 4,
      maxCommandRunSeconds: 300,
      requestsPerMinute: 6000,
      storageQuotaBytes: 1e9,
      processingQuotaBytesPerMonth: 1e10,
      privateFiles: false,
    });
    const free = svc.client(await svc.newAccount('bulk'));
    // Holds the one vCPU for up to a minute (-re: in real time); cancelled at the end.
    const blocker = await pro.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=10:duration=60 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'long.mp4' },
      vcpu_count: 1,
    });
    const short = (name: string) => ({
      ffmpeg_command: '-f lavfi -i testsrc=size=32x32:rate=10:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: `${name}.mp4` },
      vcpu_count: 1,
    });
    const record = (api: ApiClient, id: string) => api.get(`/v1/commands/${id}`).then((res) => res.body);
    try {
      // A running command's progress shows on its list item: no request per running command.
      const item = await until(
        'the blocker on the list with progress',
        async () => (await pro.get('/v1/commands?limit=50')).body.find((c: { command_id: string }) => c.command_id === blocker),
        (c) => c?.status === 'PROCESSING' && c.progress !== null,
      );
      assert.ok(item.progress.out_time_seconds >= 0);
      assert.ok(item.timings.steps.length === 1 && item.timings.steps[0].queued_seconds >= 0, JSON.stringify(item.timings));
      assert.equal(item.timings.steps[0].ffmpeg_seconds, null, 'not known before the step ends');

      // No start in the last 15 minutes: no estimate. (The blocker's start is made an hour old here.)
      const started = (await svc.service.commands.findById(blocker))!.startedAt!;
      await svc.service.commands.update(blocker, { startedAt: new Date(started.getTime() - 3_600_000) });

      const waiting = [await free.submit(short('a')), await free.submit(short('b')), await free.submit(short('c'))];
      const positions = async () => Promise.all(waiting.map(async (id) => await record(free, id)));
      let seen = await until('three queued commands at positions 0, 1, 2', positions, (rs) =>
        rs.every((r, i) => r.status === 'QUEUED' && r.queue_position === i),
      );
      for (const r of seen) assert.equal(r.estimated_start_seconds, null, JSON.stringify(r));
      assert.deepEqual(seen[0].timings.steps, [], 'a command that has not started has no step timings yet');
      assert.equal(seen[0].timings.queued_seconds, null);

      // The pro plan (priority 10) goes before the bulk one (priority 0), whatever the arrival.
      const urgent = await pro.submit(short('urgent'));
      const urgentRecord = await until(
        'the pro command ahead of the free ones',
        () => record(pro, urgent),
        (r) => r.queue_position === 0,
      );
      assert.equal(urgentRecord.status, 'QUEUED');
      seen = await until('the free commands one place back', positions, (rs) => rs.every((r, i) => r.queue_position === i + 1));

      // A start in the last minutes: an estimate, later for those further back.
      await svc.service.commands.update(blocker, { startedAt: started });
      seen = await until('estimates', positions, (rs) => rs.every((r) => typeof r.estimated_start_seconds === 'number'));
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].estimated_start_seconds >= seen[i - 1].estimated_start_seconds);

      // Another account cannot see where a command of this one waits: it is not found.
      assert.equal((await pro.get(`/v1/commands/${waiting[0]}`)).status, 404);

      // Once the blocker is gone the queue drains: each starts, and ends with its queued seconds counted.
      assert.equal((await pro.post(`/v1/commands/${blocker}/cancel`, {})).status, 202);
      const ended = await Promise.all(waiting.map((id) => free.waitForEnd(id, 120_000)));
      for (const { record: r } of ended) {
        assert.equal(r.status, 'SUCCESS', JSON.stringify(r));
        assert.equal(r.queue_position, null);
        assertAllNumbers(r.timings, 'timings');
      }
    } finally {
      await pro.post(`/v1/commands/${blocker}/cancel`, {});
    }
  });

  test("a SUCCESS command's timings are all known, and its ffmpeg seconds are ffmpeg_command_run_seconds", async () => {
    const api = svc.client();
    const id = await api.submit({
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      ffmpeg_command: '-i {{in_1}} -vf scale=64:48 -c:v libx264 -preset ultrafast {{out_1}}',
      vcpu_count: 1,
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assertAllNumbers(record.timings, 'timings');
    assert.equal(record.timings.ffmpeg_seconds, record.ffmpeg_command_run_seconds);
    assert.equal(record.timings.steps.length, 1);
    assert.equal(record.timings.steps[0].step, 1);
    assertAllNumbers(record.timings.steps[0], 'timings.steps[0]');
    assert.equal(record.queue_position, null);
    assert.equal(record.estimated_start_seconds, null);
    // The list item carries the same timings.
    const item = (await api.get('/v1/commands?limit=50')).body.find((c: { command_id: string }) => c.command_id === id);
    assert.deepEqual(item.timings, record.timings);
    assert.equal(item.progress, null);
  });

  test('a chain has one entry per step, and its totals add them up', async () => {
    const api = svc.client();
    const id = await api.submit(
      {
        ffmpeg_commands: [
          '-i {{in_1}} -t 1 -c:v libx264 -preset ultrafast -an {{out_cut}}',
          '-i {{out_cut}} -vf scale=64:48 -c:v libx264 -preset ultrafast {{out_small}}',
        ],
        input_files: { in_1: `${media.url}/clip.mp4` },
        output_files: { out_cut: 'cut.mp4', out_small: 'small.mp4' },
        vcpu_count: 1,
      },
      '/v1/run-chained-ffmpeg-commands',
    );
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.deepEqual(
      record.timings.steps.map((s: { step: number }) => s.step),
      [1, 2],
    );
    for (const [i, step] of record.timings.steps.entries()) assertAllNumbers(step, `timings.steps[${i}]`);
    assertAllNumbers(record.timings, 'timings');
    assert.equal(record.timings.ffmpeg_seconds, record.ffmpeg_command_run_seconds);
    const sum = (phase: string) => record.timings.steps.reduce((total: number, s: Record<string, number>) => total + s[phase], 0);
    // Each step is rounded to milliseconds, the total from the unrounded values.
    for (const phase of PHASES) assert.ok(Math.abs(record.timings[phase] - sum(phase)) <= 0.002, phase);
  });
});
