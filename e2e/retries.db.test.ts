// POST /v1/commands/{id}/retry through the public API (issue 32, item 2): a FAILED command's request
// runs again as a new command, under today's plan; the records name each other; a command is retried
// once, also when many retries arrive at the same moment.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { PlansRepo } from '../core/accounts/plans-repo.ts';
import { makeClip, startMediaServer, startService, type MediaServer, type ServiceFixture } from './harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('retrying a FAILED command', () => {
  let media: MediaServer;
  let svc: ServiceFixture;
  // Answers each path's first two requests 503, later ones with the clip; /missing.mp4 always 404.
  let flaky: Server;
  let flakyUrl: string;
  const flakyRequests = new Map<string, number>();

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
    flaky = createServer((req, res) => {
      const path = req.url ?? '/';
      const n = (flakyRequests.get(path) ?? 0) + 1;
      flakyRequests.set(path, n);
      if (path === '/missing.mp4') return void res.writeHead(404).end();
      if (n <= 2) return void res.writeHead(503).end();
      void readFile(join(media.dir, 'clip.mp4')).then((clip) => res.writeHead(200, { 'content-length': clip.length }).end(clip));
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    const flakyAddress = `127.0.0.1:${(flaky.address() as AddressInfo).port}`;
    flakyUrl = `http://${flakyAddress}`;
    svc = await startService({ allow: [media.allowEntry, flakyAddress] });
    await new PlansRepo(svc.service.database.db).create({
      name: 'retry-tests',
      maxVcpus: 2,
      maxCommandRunSeconds: 300,
      requestsPerMinute: 6000,
      storageQuotaBytes: 1e9,
      processingQuotaBytesPerMonth: 1e10,
      privateFiles: false,
    });
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    await new Promise((r) => flaky?.close(r));
  });

  test('an input server that answers 503 twice is tried again and the command succeeds; a 404 is not tried again', async () => {
    const api = svc.client(await svc.newAccount('retry-tests'));
    const ok = await api.submit({
      input_files: { in_1: `${flakyUrl}/busy.mp4` },
      output_files: { out_1: 'out.mp4' },
      ffmpeg_command: '-i {{in_1}} -t 1 -c copy {{out_1}}',
      vcpu_count: 1,
    });
    const done = (await api.waitForEnd(ok, 120_000)).record;
    assert.equal(done.status, 'SUCCESS', JSON.stringify(done));
    assert.equal(flakyRequests.get('/busy.mp4'), 3);

    const missing = await api.submit({
      input_files: { in_1: `${flakyUrl}/missing.mp4` },
      output_files: { out_1: 'out.mp4' },
      ffmpeg_command: '-i {{in_1}} -t 1 -c copy {{out_1}}',
      vcpu_count: 1,
    });
    const failed = (await api.waitForEnd(missing, 120_000)).record;
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.error_status, 'UNREACHABLE_INPUT_FILE');
    assert.match(failed.error_message, /answered HTTP 404/);
    assert.equal(flakyRequests.get('/missing.mp4'), 1);
  });

  /** A command whose input is missing: FAILED (UNREACHABLE_INPUT_FILE) until the file appears. */
  const missingInput = (name: string) => ({
    input_files: { in_1: `${media.url}/${name}` },
    output_files: { out_1: 'out.mp4' },
    ffmpeg_command: '-i {{in_1}} -t 1 -c copy {{out_1}}',
    vcpu_count: 1,
    metadata: { purpose: 'retry test' },
  });

  test('the retry runs the request again; the two records name each other; a second retry is a 409', async () => {
    const api = svc.client(await svc.newAccount('retry-tests'));
    const first = await api.submit(missingInput('late.mp4'));
    const failed = (await api.waitForEnd(first)).record;
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.error_status, 'UNREACHABLE_INPUT_FILE');
    assert.equal(failed.retry_of, null);
    assert.equal(failed.retried_by, null);

    await copyFile(join(media.dir, 'clip.mp4'), join(media.dir, 'late.mp4'));
    const res = await api.post(`/v1/commands/${first}/retry`, undefined);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const second = res.body.command_id as string;
    assert.notEqual(second, first);
    const done = (await api.waitForEnd(second)).record;
    assert.equal(done.status, 'SUCCESS', JSON.stringify(done));
    assert.equal(done.retry_of, first);
    assert.equal(done.retried_by, null);
    assert.deepEqual(done.metadata, { purpose: 'retry test' });
    assert.equal(done.original_request.ffmpeg_command, failed.original_request.ffmpeg_command);

    // The FAILED command's record (cached by the poll cache since it ended) shows its retry.
    const deadline = Date.now() + 30_000;
    let again = (await api.get(`/v1/commands/${first}`)).body;
    while (again.retried_by !== second && Date.now() < deadline) {
      await sleep(100);
      again = (await api.get(`/v1/commands/${first}`)).body;
    }
    assert.equal(again.retried_by, second);
    const list = (await api.get('/v1/commands?limit=10')).body as {
      command_id: string;
      retry_of: string | null;
      retried_by: string | null;
    }[];
    assert.deepEqual(
      list.filter((c) => c.command_id === first || c.command_id === second).map((c) => [c.command_id, c.retry_of, c.retried_by]),
      [
        [second, first, null],
        [first, null, second],
      ],
    );

    const twice = await api.post(`/v1/commands/${first}/retry`, undefined);
    assert.equal(twice.status, 409);
    assert.match(twice.body.detail, new RegExp(`retried already by command ${second}`));
    const ofSuccess = await api.post(`/v1/commands/${second}/retry`, undefined);
    assert.equal(ofSuccess.status, 409);
    assert.match(ofSuccess.body.detail, /is SUCCESS: only a FAILED command can be retried/);
  });

  test('a retry sent again with its Idempotency-Key answers the same new command, not a 409', async () => {
    const api = svc.client(await svc.newAccount('retry-tests'));
    const first = await api.submit(missingInput('not-yet.mp4'));
    assert.equal((await api.waitForEnd(first)).record.status, 'FAILED');
    const headers = { 'idempotency-key': `retry-${first}` };
    const one = await api.request('POST', `/v1/commands/${first}/retry`, undefined, headers);
    const two = await api.request('POST', `/v1/commands/${first}/retry`, undefined, headers);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal(two.status, 200, JSON.stringify(two.body));
    assert.equal(two.body.command_id, one.body.command_id);
    assert.equal(two.headers.get('idempotent-replayed'), 'true');
    await api.waitForEnd(one.body.command_id);
  });

  test('many retries of one command at the same moment make one command', async () => {
    const api = svc.client(await svc.newAccount('retry-tests'));
    const first = await api.submit(missingInput('never-there.mp4'));
    assert.equal((await api.waitForEnd(first)).record.status, 'FAILED');
    const answers = await Promise.all(Array.from({ length: 20 }, () => api.post(`/v1/commands/${first}/retry`, undefined)));
    const accepted = answers.filter((a) => a.status === 200);
    assert.equal(accepted.length, 1, JSON.stringify(answers.map((a) => [a.status, a.body])));
    assert.ok(answers.every((a) => a.status === 200 || a.status === 409));
    const retryId = accepted[0].body.command_id;
    for (const refused of answers.filter((a) => a.status === 409)) assert.match(refused.body.detail, /retried already/);
    const ids = ((await api.get('/v1/commands?limit=50')).body as { command_id: string; retry_of: string | null }[]).filter(
      (c) => c.retry_of === first,
    );
    assert.deepEqual(
      ids.map((c) => c.command_id),
      [retryId],
    );
    await api.waitForEnd(retryId);
  });

  test("a retry is checked against today's plan; unknown commands are 404; a bad id is 422", async () => {
    const db = svc.service.database.db;
    await new PlansRepo(db).create({
      name: 'lowered-later',
      maxVcpus: 2,
      maxCommandRunSeconds: 300,
      requestsPerMinute: 6000,
      storageQuotaBytes: 1e9,
      processingQuotaBytesPerMonth: 1e10,
      privateFiles: false,
    });
    const api = svc.client(await svc.newAccount('lowered-later'));
    const first = await api.submit({ ...missingInput('gone.mp4'), vcpu_count: 2 });
    assert.equal((await api.waitForEnd(first)).record.status, 'FAILED');
    await new PlansRepo(db).update('lowered-later', { maxVcpus: 1 });
    const res = await api.post(`/v1/commands/${first}/retry`, undefined);
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body.detail), /vcpu/i);
    assert.equal((await api.get(`/v1/commands/${first}`)).body.retried_by, null);

    assert.equal((await api.post('/v1/commands/00000000-0000-4000-8000-000000000000/retry', undefined)).status, 404);
    const bad = await api.post('/v1/commands/not-a-uuid/retry', undefined);
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['path', 'command_id']);
  });
});
