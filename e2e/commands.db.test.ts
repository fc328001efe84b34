// The command API end to end in embedded mode: real HTTP, real ffmpeg, media from a loopback server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeClip, probeJson, startMediaServer, startService, type MediaServer, type ServiceFixture } from './harness.ts';
import { PlansRepo } from '../core/accounts/plans-repo.ts';

describe('commands, embedded mode', () => {
  let media: MediaServer;
  let svc: ServiceFixture;

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
    svc = await startService({ allow: [media.allowEntry] });
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  test('the README example: submit, poll through the stages to SUCCESS, download the output', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast -c:a aac {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      metadata: { job: 'thumb', n: 3, ratio: 1.5, ok: true },
    });
    assert.match(id, /^[0-9a-f-]{36}$/);
    const { record, seen } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.equal(seen[0].split('/')[0] === 'QUEUED' || seen[0].startsWith('PROCESSING'), true);
    assert.ok(seen.includes('SUCCESS'));
    // Stages only ever move forward.
    const order = ['DOWNLOADING', 'PREPARING_INPUT_FILES', 'FFMPEG_PROCESSING', 'UPLOADING'];
    const stages = seen.filter((s) => s.includes('/')).map((s) => order.indexOf(s.split('/')[1]));
    assert.deepEqual(
      stages,
      [...stages].sort((a, b) => a - b),
    );

    assert.equal(record.command_type, 'FFMPEG_COMMAND');
    assert.equal(record.environment_name, 'main');
    assert.equal(record.vcpu_count, 8);
    assert.equal(record.error_status, null);
    assert.deepEqual(record.metadata, { job: 'thumb', n: 3, ratio: 1.5, ok: true });
    assert.deepEqual(record.original_request, {
      ffmpeg_command: '-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast -c:a aac {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      max_command_run_seconds: 300,
      vcpu_count: 8,
      metadata: { job: 'thumb', n: 3, ratio: 1.5, ok: true },
    });
    assert.ok(record.ffmpeg_command_run_seconds > 0);
    assert.ok(record.total_processing_seconds >= record.ffmpeg_command_run_seconds);
    assert.ok(record.processing_quota_used > 0);

    const out = record.output_files.out_1;
    assert.equal(out.file_type, 'video');
    assert.equal(out.file_format, 'mp4');
    assert.equal(out.codec, 'h264');
    assert.equal(out.mime_type, 'video/mp4');
    assert.equal(out.width, 160);
    assert.equal(out.height, 120);
    assert.equal(out.frame_rate, 25);
    assert.equal(out.is_varying_frame_rate, false);
    assert.equal(out.pixel_format, 'yuv420p');
    assert.ok(Math.abs(out.duration - 2) < 0.2, `duration ${out.duration}`);
    assert.match(out.timebase, /^\d+\/\d+$/);
    assert.ok(out.bitrate_video_kb > 0 && out.bitrate_audio_kb > 0);
    assert.ok(out.size_mbytes > 0);
    assert.equal(out.is_deleted, false);
    assert.equal(out.is_private, false);
    assert.equal(out.status, 'STORED');
    assert.ok(out.storage_url.endsWith('/small.mp4'));

    // The output is served without an API key, with its type and Range support.
    const res = await fetch(out.storage_url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'video/mp4');
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.ok(Math.abs(bytes.length / 1e6 - out.size_mbytes) < 1e-5);
    const ranged = await fetch(out.storage_url, { headers: { range: 'bytes=0-9' } });
    assert.equal(ranged.status, 206);
    assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), bytes.subarray(0, 10));
    const probed = await probeJson(out.storage_url);
    assert.equal(probed.streams[0].width, 160);
  });

  test('a three-step chain feeds each output into the next step', async () => {
    const api = svc.client();
    const id = await api.submit(
      {
        ffmpeg_commands: [
          '-i {{in_1}} -t 1 -c:v libx264 -preset ultrafast -an {{out_cut}}',
          '-i {{out_cut}} -vf scale=64:48 -c:v libx264 -preset ultrafast {{out_small}}',
          '-i {{out_small}} -frames:v 1 {{out_thumb}}',
        ],
        input_files: { in_1: `${media.url}/clip.mp4` },
        output_files: { out_cut: 'cut.mp4', out_small: 'small.mp4', out_thumb: 'thumb.png' },
        vcpu_count: 2,
      },
      '/v1/run-chained-ffmpeg-commands',
    );
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.equal(record.command_type, 'FFMPEG_CHAINED_COMMANDS');
    assert.deepEqual(Object.keys(record.output_files), ['out_cut', 'out_small', 'out_thumb']);
    assert.ok(Math.abs(record.output_files.out_cut.duration - 1) < 0.15);
    assert.equal(record.output_files.out_small.width, 64);
    assert.equal(record.output_files.out_thumb.file_type, 'image');
    assert.equal(record.output_files.out_thumb.mime_type, 'image/png');
    assert.equal(record.output_files.out_thumb.width, 64);
    // The chain's second and third inputs came from storage, not from the media server.
    assert.equal(media.requests.filter((r) => r.includes('clip.mp4')).length >= 1, true);
  });

  test('a failed chain step fails the command and later steps do not run', async () => {
    const api = svc.client();
    const id = await api.submit(
      {
        ffmpeg_commands: ['-i {{in_1}} -c:v nosuchcodec {{out_a}}', '-i {{out_a}} {{out_b}}'],
        input_files: { in_1: `${media.url}/clip.mp4` },
        output_files: { out_a: 'a.mp4', out_b: 'b.mp4' },
      },
      '/v1/run-chained-ffmpeg-commands',
    );
    const { record } = await api.waitForEnd(id);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'FFMPEG_FAILED');
    // The cause comes first, not the stream report ffmpeg printed before it.
    assert.match(record.error_message, /^ffmpeg exited with code \d+: Unknown encoder 'nosuchcodec'/);
    assert.deepEqual(record.output_files, {});
  });

  test('error statuses: unreachable input, no file name, forbidden address, missing output', async () => {
    const api = svc.client();
    const cases = [
      { url: `${media.url}/missing/clip.mp4`, status: 'UNREACHABLE_INPUT_FILE', message: /404/ },
      { url: `${media.url}/`, status: 'INVALID_INPUT_FILE_NAME', message: /file name/ },
      { url: `http://127.0.0.2:9/clip.mp4`, status: 'FORBIDDEN_INPUT_ADDRESS', message: /127\.0\.0\.2/ },
    ];
    for (const c of cases) {
      const id = await api.submit({
        ffmpeg_command: '-i {{in_1}} {{out_1}}',
        input_files: { in_1: c.url },
        output_files: { out_1: 'o.mp4' },
      });
      const { record } = await api.waitForEnd(id);
      assert.equal(record.status, 'FAILED');
      assert.equal(record.error_status, c.status, JSON.stringify(record));
      assert.match(record.error_message, c.message);
    }
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -f null {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'o.mp4' },
    });
    const { record } = await api.waitForEnd(id);
    assert.equal(record.error_status, 'OUTPUT_FILE_NOT_CREATED');
    assert.match(record.error_message, /out_1/);
  });

  test('max_command_run_seconds stops ffmpeg promptly with FFMPEG_TIMEOUT', async () => {
    const api = svc.client();
    const started = Date.now();
    const id = await api.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=64x64:rate=10 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'forever.mp4' },
      max_command_run_seconds: 1.5,
      vcpu_count: 1,
    });
    const { record } = await api.waitForEnd(id, 30_000);
    const elapsed = (Date.now() - started) / 1000;
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'FFMPEG_TIMEOUT');
    assert.ok(record.ffmpeg_command_run_seconds >= 1.5);
    assert.ok(elapsed < 15, `took ${elapsed} s`); // generous: proves the kill, not the machine's speed
  });

  test('list: newest first, limit and offset, list item fields', async () => {
    const api = svc.client(await svc.newAccount('pro'));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        await api.submit({
          ffmpeg_command: '-f lavfi -i color=c=red:s=32x32:d=0.2 {{out_1}}',
          output_files: { out_1: `r${i}.mp4` },
          vcpu_count: 1,
        }),
      );
    }
    for (const id of ids) await api.waitForEnd(id);
    const all = await api.get('/v1/commands');
    assert.equal(all.status, 200);
    assert.deepEqual(
      all.body.map((c: any) => c.command_id),
      [...ids].reverse(),
    );
    const item = all.body[0];
    assert.equal(item.status, 'SUCCESS');
    assert.equal(item.environment_name, 'main');
    assert.equal(item.output_file_count, 1);
    assert.ok(item.storage_quota_used > 0);
    assert.ok(item.processing_quota_used > 0);
    assert.ok(item.processing_seconds >= item.ffmpeg_command_run_seconds);
    assert.ok(!Number.isNaN(Date.parse(item.created_at)));
    assert.equal(item.error_status, null);
    const page = await api.get('/v1/commands?limit=1&offset=1');
    assert.deepEqual(
      page.body.map((c: any) => c.command_id),
      [ids[1]],
    );
  });

  test("two accounts cannot see each other's commands", async () => {
    const alice = svc.client(await svc.newAccount('pro'));
    const bob = svc.client(await svc.newAccount('pro'));
    const id = await alice.submit({
      ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 {{out_1}}',
      output_files: { out_1: 'a.png' },
      vcpu_count: 1,
    });
    assert.equal((await bob.get(`/v1/commands/${id}`)).status, 404);
    assert.deepEqual((await bob.get('/v1/commands')).body, []);
    assert.equal((await alice.get(`/v1/commands/${id}`)).status, 200);
    assert.equal((await alice.get('/v1/commands/00000000-0000-4000-8000-000000000000')).status, 404);
  });

  test('plans: what a plan does not allow is a 403 with a detail', async () => {
    const free = svc.client(await svc.newAccount('free'));
    const base = { ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}', output_files: { out_1: 'a.png' } };
    for (const [body, words] of [
      [{ ...base, is_private: true }, /private/],
      [{ ...base, vcpu_count: 5 }, /vcpu_count 5 exceeds the maximum of 4/],
      [{ ...base, max_command_run_seconds: 301 }, /max_command_run_seconds/],
    ] as const) {
      const res = await free.post('/v1/run-ffmpeg-command', body);
      assert.equal(res.status, 403);
      assert.match(res.body.detail, words);
    }
    // Without vcpu_count the default of 8 is lowered to the plan's maximum.
    const id = await free.submit(base);
    const { record } = await free.waitForEnd(id);
    assert.equal(record.vcpu_count, 4);
    assert.equal(record.status, 'SUCCESS');
  });

  test('quotas: once a command has used up a quota, the next submit is a 403 naming it and stores nothing', async () => {
    const plans = new PlansRepo(svc.service.database.db);
    const limits = { maxVcpus: 4, maxCommandRunSeconds: 300, requestsPerMinute: 1000, privateFiles: false };
    // A byte of each: the first command's output uses up the quota.
    await plans.create({ name: 'one-byte-processing', ...limits, storageQuotaBytes: 1e9, processingQuotaBytesPerMonth: 1 });
    await plans.create({ name: 'one-byte-storage', ...limits, storageQuotaBytes: 1, processingQuotaBytesPerMonth: 1e9 });
    const body = { ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}', output_files: { out_1: 'a.png' } };
    for (const [plan, words] of [
      ['one-byte-processing', /processing quota exceeded/],
      ['one-byte-storage', /storage quota exceeded/],
    ] as const) {
      const api = svc.client(await svc.newAccount(plan));
      const first = await api.submit(body);
      assert.equal((await api.waitForEnd(first)).record.status, 'SUCCESS');
      const refused = await api.post('/v1/run-ffmpeg-command', body);
      assert.equal(refused.status, 403, plan);
      assert.match(refused.body.detail, words);
      assert.deepEqual(
        (await api.get('/v1/commands')).body.map((c: { command_id: string }) => c.command_id),
        [first],
        `${plan}: only the first command is stored`,
      );
    }
  });

  test('admission: an account never runs more vCPUs than its plan; later commands wait, first in first out', async () => {
    const key = await svc.newAccount('free'); // max 4 vCPUs
    const api = svc.client(key);
    const body = (n: number) => ({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=10:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: `w${n}.mp4` },
      vcpu_count: 3,
    });
    const ids = [await api.submit(body(1)), await api.submit(body(2)), await api.submit(body(3))];
    for (const id of ids) assert.equal((await api.waitForEnd(id)).record.status, 'SUCCESS');
    const rows = await Promise.all(ids.map((id) => svc.service.commands.findById(id)));
    for (let i = 1; i < rows.length; i++) {
      assert.ok(rows[i]!.startedAt!.getTime() >= rows[i - 1]!.finishedAt!.getTime(), `command ${i} started before ${i - 1} finished`);
    }
  });

  test("a plan lowered while a command waits: it fails PLAN_LIMIT_EXCEEDED and the account's next command runs", async () => {
    const plans = new PlansRepo(svc.service.database.db);
    await plans.create({
      name: 'shrinking',
      maxVcpus: 4,
      maxCommandRunSeconds: 300,
      requestsPerMinute: 1000,
      storageQuotaBytes: 1e9,
      processingQuotaBytesPerMonth: 1e10,
      privateFiles: false,
    });
    const api = svc.client(await svc.newAccount('shrinking'));
    const body = (vcpus: number, seconds: number) => ({
      ffmpeg_command: `-re -f lavfi -i testsrc=size=32x32:rate=10:duration=${seconds} -c:v libx264 -preset ultrafast {{out_1}}`,
      output_files: { out_1: 'o.mp4' },
      vcpu_count: vcpus,
    });
    const running = await api.submit(body(3, 2)); // holds 3 of the account's 4 vCPUs for 2 s
    // It must be running before the plan changes, or it would be over the lowered plan too.
    for (let status = ''; status !== 'PROCESSING'; await new Promise((r) => setTimeout(r, 20))) {
      status = (await api.get(`/v1/commands/${running}`)).body.status;
      assert.ok(status === 'QUEUED' || status === 'PROCESSING', `the running command is ${status}`);
    }
    const big = await api.submit(body(2, 1)); // waits: 3 + 2 > 4
    const small = await api.submit(body(1, 1)); // waits behind it (first in, first out)
    await plans.update('shrinking', { maxVcpus: 1 });
    const failed = (await api.waitForEnd(big)).record;
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.error_status, 'PLAN_LIMIT_EXCEEDED');
    assert.match(failed.error_message, /vcpu_count 2 is more than the 1 vCPUs the account's plan allows now/);
    assert.equal((await api.waitForEnd(running)).record.status, 'SUCCESS');
    assert.equal((await api.waitForEnd(small)).record.status, 'SUCCESS');
  });
});
