// Live progress and cancel end to end in embedded mode: real HTTP, real (confined) ffmpeg, on a
// machine of one vCPU so that a second command waits QUEUED behind a running one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { startService, type ApiClient, type ServiceFixture } from './harness.ts';

const run = promisify(execFile);

/** Command lines of processes (ffmpeg, and bubblewrap around it) that name `marker`. */
async function processesNaming(marker: string): Promise<string[]> {
  try {
    return (await run('pgrep', ['-a', '-f', marker])).stdout.trim().split('\n');
  } catch (err) {
    if ((err as { code?: number }).code === 1) return []; // none
    throw err;
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + limitMs; ; await new Promise((r) => setTimeout(r, 100))) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
  }
}

/** A command that writes 20 s of video in real time (-re), to an output named after `marker`. */
const longCommand = (marker: string, seconds = 20) => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=size=64x48:rate=10 -t ${seconds} -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: `long_${marker}.mp4` },
  vcpu_count: 1,
});

const newMarker = () => `ffopmark${randomBytes(6).toString('hex')}`;

describe('progress and cancel, embedded mode', () => {
  let svc: ServiceFixture;
  let api: ApiClient;

  before(async () => {
    // No resync pass in the tests' time: a cancel is acted on because the API asked for a pass.
    svc = await startService({ env: { FFOP_LOCAL_MAX_VCPUS: '1' }, tuning: { reconcileResyncMs: 3_600_000 } });
    api = svc.client();
  });
  after(async () => {
    await svc?.close();
  });

  const poll = async (id: string) => (await api.get(`/v1/commands/${id}`)).body;

  test('a running command shows how far ffmpeg is; cancel stops ffmpeg and FAILS it CANCELLED', async () => {
    const marker = newMarker();
    const id = await api.submit(longCommand(marker));
    const early = await poll(id);
    assert.equal(early.progress, null, `before ffmpeg reports: ${JSON.stringify(early)}`);

    const running = await until('progress above 0%', async () => {
      const record = await poll(id);
      return record.progress?.percent > 0 ? record : undefined;
    });
    assert.equal(running.status, 'PROCESSING');
    assert.equal(running.processing_stage, 'FFMPEG_PROCESSING');
    const { percent, out_time_seconds, speed } = running.progress;
    assert.ok(percent > 0 && percent < 100, `percent ${percent}`);
    assert.ok(out_time_seconds > 0 && out_time_seconds < 20, `out time ${out_time_seconds}`);
    // -t 20 is the expected duration: the percentage is the out time's share of it.
    assert.ok(Math.abs(percent - (out_time_seconds / 20) * 100) <= 0.1, JSON.stringify(running.progress));
    assert.ok(speed === null || speed > 0, `speed ${speed}`);
    assert.ok(
      (await processesNaming(marker)).some((line) => line.includes('ffmpeg')),
      'ffmpeg runs',
    );

    const cancel = await api.post(`/v1/commands/${id}/cancel`, undefined);
    assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
    assert.equal(cancel.body.command_id, id);
    assert.equal(cancel.body.status, 'PROCESSING');

    const { record } = await api.waitForEnd(id, 30_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'CANCELLED');
    assert.equal(record.error_message, 'cancelled through the API');
    assert.equal(record.progress, null);
    assert.deepEqual(record.output_files, {});
    // ffmpeg and its sandbox are gone.
    await until('ffmpeg to be gone', async () => ((await processesNaming(marker)).length === 0 ? true : undefined), 30_000);

    const again = await api.post(`/v1/commands/${id}/cancel`, undefined);
    assert.deepEqual([again.status, again.body], [409, { detail: `command ${id} has already ended (FAILED)` }]);
  });

  test('unknown ids, and commands of another account, are 404; a malformed id is 422', async () => {
    const unknown = await api.post(`/v1/commands/${randomUUID()}/cancel`, undefined);
    assert.deepEqual([unknown.status, unknown.body], [404, { detail: 'Command not found' }]);

    const mine = await api.submit({
      ffmpeg_command: '-f lavfi -i testsrc=size=32x32:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 1,
    });
    const other = svc.client(await svc.newAccount('pro'));
    const foreign = await other.post(`/v1/commands/${mine}/cancel`, undefined);
    assert.deepEqual([foreign.status, foreign.body], [404, { detail: 'Command not found' }]);
    assert.equal((await api.waitForEnd(mine)).record.status, 'SUCCESS', 'the other account could not cancel it');
    const ended = await api.post(`/v1/commands/${mine}/cancel`, undefined);
    assert.deepEqual([ended.status, ended.body], [409, { detail: `command ${mine} has already ended (SUCCESS)` }]);

    const malformed = await api.post('/v1/commands/not-a-uuid/cancel', undefined);
    assert.equal(malformed.status, 422);
    assert.deepEqual(malformed.body.detail[0].loc, ['path', 'command_id']);
  });

  test('a QUEUED command behind a running one is cancelled without ever starting', async () => {
    const marker = newMarker();
    const running = await api.submit(longCommand(marker, 60));
    await until('the first command to run', async () => ((await poll(running)).status === 'PROCESSING' ? true : undefined));
    const queued = await api.submit(longCommand(newMarker()));
    assert.equal((await poll(queued)).status, 'QUEUED', 'the one vCPU is taken');

    const cancel = await api.post(`/v1/commands/${queued}/cancel`, undefined);
    assert.equal(cancel.status, 202);
    assert.equal(cancel.body.status, 'QUEUED');
    const { record, seen } = await api.waitForEnd(queued, 30_000);
    assert.deepEqual([record.status, record.error_status], ['FAILED', 'CANCELLED']);
    assert.ok(!seen.some((s) => s.startsWith('PROCESSING')), `it never ran: ${seen.join(' ')}`);
    assert.equal((await poll(running)).status, 'PROCESSING', 'the running command goes on');

    assert.equal((await api.post(`/v1/commands/${running}/cancel`, undefined)).status, 202);
    assert.equal((await api.waitForEnd(running, 30_000)).record.error_status, 'CANCELLED');
    await until('ffmpeg to be gone', async () => ((await processesNaming(marker)).length === 0 ? true : undefined), 30_000);
  });

  test("a chain cancelled in its second step keeps the first step's output", async () => {
    const marker = newMarker();
    const id = await api.submit(
      {
        ffmpeg_commands: [
          '-f lavfi -i testsrc=size=64x48:rate=10:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
          // The first output looped in real time for 30 s: long enough to be cancelled while it runs.
          `-re -stream_loop -1 -i {{out_1}} -t 30 -c:v libx264 -preset ultrafast {{out_2}}`,
        ],
        output_files: { out_1: 'first.mp4', out_2: `second_${marker}.mp4` },
        vcpu_count: 1,
      },
      '/v1/run-chained-ffmpeg-commands',
    );
    const second = await until('the second step to report progress', async () => {
      const record = await poll(id);
      return record.output_files.out_1 && record.progress?.percent > 0 ? record : undefined;
    });
    assert.ok(second.progress.percent < 100, JSON.stringify(second.progress));

    assert.equal((await api.post(`/v1/commands/${id}/cancel`, undefined)).status, 202);
    const { record } = await api.waitForEnd(id, 30_000);
    assert.deepEqual([record.status, record.error_status], ['FAILED', 'CANCELLED']);
    assert.deepEqual(Object.keys(record.output_files), ['out_1']);
    assert.equal(record.output_files.out_1.status, 'STORED');
    const download = await fetch(record.output_files.out_1.storage_url);
    assert.equal(download.status, 200);
    assert.ok((await download.arrayBuffer()).byteLength > 0);
    await until('ffmpeg to be gone', async () => ((await processesNaming(marker)).length === 0 ? true : undefined), 30_000);
  });
});
