// GET /v1/commands/{id}/log through the public API (issue 32, item 5): ffmpeg's stderr of each step,
// while it runs and after; the last 1 MiB per step; private to the account; gone after the retention.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { startService, type ApiClient, type ServiceFixture } from './harness.ts';
import { CommandLogsRepo } from '../core/commands/command-logs-repo.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function logOf(api: ApiClient, id: string, query = ''): Promise<{ status: number; text: string; type: string | null }> {
  const res = await api.get(`/v1/commands/${id}/log${query}`);
  return {
    status: res.status,
    text: typeof res.body === 'string' ? res.body : JSON.stringify(res.body),
    type: res.headers.get('content-type'),
  };
}

describe("ffmpeg's log", () => {
  let svc: ServiceFixture;
  before(async () => {
    svc = await startService();
  });
  after(async () => {
    await svc?.close();
  });

  test('a SUCCESS command: ffmpeg output under its step header, no path of the machine', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-f lavfi -i testsrc=size=64x64:rate=10:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'out.mp4' },
      vcpu_count: 1,
    });
    assert.equal((await api.waitForEnd(id)).record.status, 'SUCCESS');
    const log = await logOf(api, id);
    assert.equal(log.status, 200);
    assert.match(log.type ?? '', /^text\/plain/);
    assert.match(log.text, /^--- step 1 of 1 ---\n/);
    assert.match(log.text, /Output #0, mp4/);
    assert.match(log.text, /\.\/\.out\/out_1\/out\.mp4|\.out\/out_1\/out\.mp4/);
    assert.ok(!log.text.includes(svc.dataDir), "the service's data folder (and the work folder in it) is not named");
    assert.ok(!log.text.includes(process.env.HOME ?? '/root/'), 'no home folder');
  });

  test('a FAILED chain: both steps, ffmpeg error in the failing one; ?step= picks one; a step it does not have is a 404', async () => {
    const api = svc.client();
    const id = await api.submit(
      {
        ffmpeg_commands: [
          '-f lavfi -i testsrc=size=64x64:rate=10:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
          // A stream that does not exist: ffmpeg fails at run time.
          '-i {{out_1}} -map 0:a -c copy {{out_2}}',
        ],
        output_files: { out_1: 'a.mp4', out_2: 'b.m4a' },
        vcpu_count: 1,
      },
      '/v1/run-chained-ffmpeg-commands',
    );
    const record = (await api.waitForEnd(id)).record;
    assert.equal(record.status, 'FAILED', JSON.stringify(record));
    const all = await logOf(api, id);
    assert.match(all.text, /--- step 1 of 2 ---\n[\s\S]*Output #0[\s\S]*--- step 2 of 2 ---\n/);
    const second = await logOf(api, id, '?step=2');
    assert.match(second.text, /^--- step 2 of 2 ---\n/);
    assert.ok(!second.text.includes('step 1 of 2'));
    assert.match(second.text, /matches no streams|Stream map/);
    const tooFar = await api.get(`/v1/commands/${id}/log?step=3`);
    assert.equal(tooFar.status, 404);
    assert.match(tooFar.body.detail, /has no step 3: it has 2 steps/);
    for (const bad of ['0', '11', 'two']) {
      const res = await api.get(`/v1/commands/${id}/log?step=${bad}`);
      assert.equal(res.status, 422, bad);
      assert.deepEqual(res.body.detail[0].loc, ['query', 'step']);
    }
  });

  test('readable while ffmpeg runs', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=10:duration=20 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'long.mp4' },
      vcpu_count: 1,
    });
    const deadline = Date.now() + 60_000;
    let log = await logOf(api, id);
    while (!/Output #0/.test(log.text) && Date.now() < deadline) {
      await sleep(200);
      log = await logOf(api, id);
    }
    assert.match(log.text, /Output #0/);
    assert.equal((await api.get(`/v1/commands/${id}`)).body.status, 'PROCESSING', 'the log was there before the end');
    await api.post(`/v1/commands/${id}/cancel`, undefined);
    await api.waitForEnd(id);
  });

  test('a log written faster than it is kept says where text was dropped, and stays bounded', async () => {
    const api = svc.client();
    // -loglevel debug prints a line per frame: about 1.6 MB for 10,000 frames.
    const id = await api.submit({
      ffmpeg_command: '-loglevel debug -f lavfi -i testsrc=size=16x16:rate=1000:duration=10 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'chatty.mp4' },
      vcpu_count: 1,
    });
    const record = (await api.waitForEnd(id, 120_000)).record;
    const log = await logOf(api, id);
    assert.equal(record.status, 'SUCCESS');
    assert.match(log.text, /\[\.\.\. \d+ characters of ffmpeg's output dropped: it wrote faster than the log keeps \.\.\.\]/);
    assert.ok(log.text.length <= 1024 * 1024 + 200, `kept ${log.text.length} characters`);
    assert.match(log.text, /frames successfully decoded|Output #0/);
  });

  test("another account's log is a 404; after the retention it is a 410 and the prune deletes it", async () => {
    const owner = svc.client();
    const other = svc.client(await svc.newAccount('pro'));
    const id = await owner.submit({
      ffmpeg_command: '-f lavfi -i testsrc=size=32x32:rate=10:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'out.mp4' },
      vcpu_count: 1,
    });
    await owner.waitForEnd(id);
    const theirs = await other.get(`/v1/commands/${id}/log`);
    assert.equal(theirs.status, 404);
    assert.deepEqual(theirs.body, (await other.get('/v1/commands/00000000-0000-4000-8000-000000000000/log')).body);

    const db = svc.service.database.db;
    // The command ended 8 days ago (retention: 7 days).
    await db.execute(sql`update commands set finished_at = now() - interval '8 days' where id = ${id}`);
    const deadline = Date.now() + 30_000;
    let gone = await owner.get(`/v1/commands/${id}/log`);
    while (gone.status !== 410 && Date.now() < deadline) {
      await sleep(100);
      gone = await owner.get(`/v1/commands/${id}/log`);
    }
    assert.equal(gone.status, 410);
    assert.match(gone.body.detail, /kept 7 days after the command ended/);
    const logs = new CommandLogsRepo(db);
    assert.equal((await logs.read(id)).length, 1);
    assert.ok((await logs.pruneEndedBefore(new Date(Date.now() - 7 * 86_400_000), 1000)) >= 1);
    assert.deepEqual(await logs.read(id), []);
  });
});
