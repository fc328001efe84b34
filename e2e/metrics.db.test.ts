// Prometheus metrics end to end in embedded mode: real commands, file tasks and a webhook delivery move
// the series that GET /metrics shows; the route label is the pattern, never the raw path; the token.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { makeClip, startMediaServer, startService, waitForFile, type MediaServer, type ServiceFixture } from './harness.ts';
import { parsePrometheusText, valueOf, type Sample } from '../core/metrics/testing/prometheus-text.ts';

/** The bearer token of the service under test (read from its data folder once it started). */
let generatedToken = '';

async function scrape(url: string, headers: Record<string, string> = { authorization: `Bearer ${generatedToken}` }): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`, { headers });
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

/** Scrapes until `ready` holds: an ended command's metrics are recorded right after its row is. */
async function scrapeUntil(url: string, ready: (s: Sample[]) => boolean, what: string): Promise<Sample[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const s = await scrape(url);
    if (ready(s)) return s;
    if (Date.now() > deadline) throw new Error(`metrics never showed ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('metrics, embedded mode', () => {
  let media: MediaServer;
  let svc: ServiceFixture;
  let receiver: Server;
  let receiverUrl = '';
  let received = 0;

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received++;
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as AddressInfo).port;
    receiverUrl = `http://127.0.0.1:${port}/hook`;
    svc = await startService({ allow: [media.allowEntry], webhookAllow: [`127.0.0.1:${port}`] });
    generatedToken = (await readFile(join(svc.dataDir, 'metrics-token'), 'utf8')).trim();
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    await new Promise((r) => receiver?.close(r));
  });

  test('a command to SUCCESS and one to FAILED move the counters, durations, queue wait and HTTP latency by route', async () => {
    const api = svc.client();
    const ok = await api.submit({
      ffmpeg_command: '-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast -an {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      vcpu_count: 1,
    });
    const failing = await api.submit({
      ffmpeg_command: '-i {{in_1}} -map 0:s {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'subs.srt' },
      vcpu_count: 1,
    });
    assert.equal((await api.waitForEnd(ok)).record.status, 'SUCCESS');
    const failed = (await api.waitForEnd(failing)).record;
    assert.equal(failed.error_status, 'FFMPEG_FAILED');
    // A stored file's bytes are written straight to node's response: its status is still the one counted.
    const output = (await api.get(`/v1/commands/${ok}?presigned_ttl_seconds=600`)).body.output_files.out_1;
    const ranged = await fetch(output.storage_url, { headers: { Range: 'bytes=0-9' } });
    assert.equal(ranged.status, 206);
    assert.equal((await ranged.arrayBuffer()).byteLength, 10);

    // No API key: /metrics is outside /v1 (behind its own token, generated into the data folder).
    const s = await scrapeUntil(
      svc.url,
      (x) => valueOf(x, 'ffop_commands_finished_total', { status: 'FAILED', error_status: 'FFMPEG_FAILED' }) === 1,
      'the failed command',
    );
    assert.equal(valueOf(s, 'ffop_commands_finished_total', { status: 'SUCCESS' }), 1);
    assert.equal(valueOf(s, 'ffop_command_ffmpeg_seconds_count', { status: 'SUCCESS' }), 1);
    assert.ok(valueOf(s, 'ffop_command_ffmpeg_seconds_sum', { status: 'SUCCESS' })! > 0);
    assert.equal(valueOf(s, 'ffop_command_ffmpeg_seconds_count', { status: 'FAILED' }), 1);
    assert.equal(valueOf(s, 'ffop_command_total_seconds_count', { status: 'SUCCESS' }), 1);
    assert.equal(valueOf(s, 'ffop_command_total_seconds_count', { status: 'FAILED' }), 1);
    // The total is the poll record's total_processing_seconds, measured at the same end.
    assert.ok(Math.abs(valueOf(s, 'ffop_command_total_seconds_sum', { status: 'FAILED' })! - failed.total_processing_seconds) < 1);
    assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_count', { plan: 'pro' }), 2);

    // The poll route by its pattern: no series carries a command id.
    const polls = valueOf(s, 'ffop_http_request_duration_seconds_count', {
      method: 'GET',
      route: '/v1/commands/:command_id',
      status: '200',
    });
    assert.ok(polls! >= 2, `polls counted: ${polls}`);
    assert.ok(
      valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'POST', route: '/v1/run-ffmpeg-command', status: '200' }) === 2,
    );
    assert.equal(valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: '/storage/*', status: '206' }), 1);
    const routes = new Set(s.filter((x) => x.name === 'ffop_http_request_duration_seconds_count').map((x) => x.labels.route));
    for (const id of [ok, failing])
      assert.ok(![...routes].some((r) => r.includes(id)), `a route label holds ${id}: ${[...routes].join(' ')}`);

    // State gauges, read from the database: nothing waits or runs now.
    assert.equal(valueOf(s, 'ffop_commands', { status: 'QUEUED' }), 0);
    assert.equal(valueOf(s, 'ffop_commands', { status: 'PROCESSING' }), 0);
    assert.equal(valueOf(s, 'ffop_vcpus_in_use'), 0);
    assert.equal(valueOf(s, 'ffop_queue_depth', { plan: 'pro' }), 0);
    assert.equal(valueOf(s, 'ffop_queue_depth', { plan: 'free' }), 0);
    assert.equal(typeof valueOf(s, 'ffop_webhook_deliveries_pending'), 'number');
    assert.ok(valueOf(s, 'ffop_process_resident_memory_bytes')! > 0);
  });

  test('file tasks: a stored file and a failed download', async () => {
    const api = svc.client();
    const stored = await api.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4` });
    const missing = await api.post('/v1/files/store-file', { file_url: `${media.url}/missing.mp4` });
    assert.equal((await waitForFile(api, stored.body.file_id)).status, 'STORED');
    assert.equal((await waitForFile(api, missing.body.file_id)).status, 'FAILED');
    const s = await scrapeUntil(
      svc.url,
      (x) => valueOf(x, 'ffop_file_tasks_total', { kind: 'store_file', outcome: 'failed' }) === 1,
      'the failed store-file',
    );
    assert.equal(valueOf(s, 'ffop_file_tasks_total', { kind: 'store_file', outcome: 'stored' }), 1);
  });

  test('webhook deliveries are counted by outcome', async () => {
    const api = svc.client();
    const set = await api.request('PUT', '/v1/webhook', { url: receiverUrl });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const sent = await api.post('/v1/webhook/test', {});
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const s = await scrapeUntil(svc.url, (x) => valueOf(x, 'ffop_webhook_deliveries_total', { outcome: 'delivered' }) === 1, 'a delivery');
    assert.equal(received, 1);
    assert.equal(valueOf(s, 'ffop_webhook_deliveries_pending'), 0);
    assert.equal((await api.request('DELETE', '/v1/webhook')).status, 204);
  });

  test('attack: without FFOP_METRICS_TOKEN, /metrics needs the token generated into the data folder (only its owner reads it)', async () => {
    assert.match(generatedToken, /^[0-9a-f]{64}$/);
    assert.equal((await stat(join(svc.dataDir, 'metrics-token'))).mode & 0o777, 0o600);
    for (const headers of [{}, { authorization: 'Bearer nope' }, { 'x-api-key': svc.key }] as Record<string, string>[]) {
      const res = await fetch(`${svc.url}/metrics`, { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
      await res.body?.cancel();
    }
    // The same token after a restart: Prometheus' configuration stays valid.
    await svc.stop();
    await svc.restart();
    assert.equal((await readFile(join(svc.dataDir, 'metrics-token'), 'utf8')).trim(), generatedToken);
    assert.ok((await scrape(svc.url)).length > 0);
  });

  test('attack: unknown paths and ids do not create series (the route label is bounded)', async () => {
    const api = svc.client();
    const marker = randomUUID();
    for (let i = 0; i < 20; i++) {
      assert.equal((await fetch(`${svc.url}/${marker}/${i}`)).status, 404);
      assert.equal((await api.get(`/v1/${marker}-${i}`)).status, 404);
      assert.equal((await api.get(`/v1/commands/${randomUUID()}`)).status, 404);
      // Refused before the key is looked up, still counted under its route.
      assert.equal((await fetch(`${svc.url}/v1/commands/${randomUUID()}`)).status, 401);
    }
    const s = await scrape(svc.url);
    const latency = s.filter((x) => x.name === 'ffop_http_request_duration_seconds_count');
    assert.ok(!latency.some((x) => x.labels.route.includes(marker)));
    assert.ok(valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })! >= 40);
    assert.equal(
      valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: '/v1/commands/:command_id', status: '404' }),
      20,
    );
    assert.equal(
      valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: '/v1/commands/:command_id', status: '401' }),
      20,
    );
    // Every route label is a pattern of the app or "unmatched".
    for (const { labels } of latency) assert.match(labels.route, /^(unmatched|\/[a-z0-9_\-/:.*]*)$/, labels.route);
  });
});

describe('metrics with FFOP_METRICS_TOKEN', () => {
  let svc: ServiceFixture;
  before(async () => {
    svc = await startService({ env: { FFOP_METRICS_TOKEN: 'metrics-token-for-the-test' } });
  });
  after(async () => {
    await svc?.close();
  });

  test('attack: /metrics answers 401 without the bearer token or with another one (an API key does not do), 200 with it', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer nope' },
      { 'x-api-key': svc.key },
      { authorization: `Bearer ${svc.key}` },
    ];
    for (const headers of attempts) {
      const res = await fetch(`${svc.url}/metrics`, { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.match((await res.json()).detail, /Authorization: Bearer <FFOP_METRICS_TOKEN>/);
    }
    const s = await scrape(svc.url, { authorization: 'Bearer metrics-token-for-the-test' });
    assert.equal(valueOf(s, 'ffop_commands', { status: 'QUEUED' }), 0);
    // The rest of the service is unchanged.
    assert.equal((await fetch(`${svc.url}/healthz`)).status, 200);
    assert.equal((await svc.client().get('/v1/commands')).status, 200);
  });
});
