import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMetrics } from './metrics.ts';
import { parsePrometheusText, valueOf } from './testing/prometheus-text.ts';

const scrape = async (metrics: ReturnType<typeof createMetrics>) => parsePrometheusText(await metrics.registry.metrics());

test('commands: admitted by plan, ended by status and error_status, with both durations', async () => {
  const metrics = createMetrics();
  metrics.engine.commandAdmitted('pro', 3);
  metrics.engine.commandAdmitted('free', 0.2);
  metrics.engine.commandEnded('SUCCESS', null, 4, 12);
  metrics.engine.commandEnded('FAILED', 'FFMPEG_FAILED', 1, 2);
  metrics.engine.commandEnded('FAILED', 'FFMPEG_FAILED', 1, 2);
  const s = await scrape(metrics);

  assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_count', { plan: 'pro' }), 1);
  assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_sum', { plan: 'pro' }), 3);
  assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_bucket', { plan: 'pro', le: '1' }), 0);
  assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_bucket', { plan: 'pro', le: '5' }), 1);
  assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_count', { plan: 'free' }), 1);

  // A success has no error_status label at all.
  assert.equal(valueOf(s, 'ffop_commands_finished_total', { status: 'SUCCESS' }), 1);
  assert.equal(valueOf(s, 'ffop_commands_finished_total', { status: 'FAILED', error_status: 'FFMPEG_FAILED' }), 2);
  assert.equal(valueOf(s, 'ffop_command_ffmpeg_seconds_count', { status: 'SUCCESS' }), 1);
  assert.equal(valueOf(s, 'ffop_command_ffmpeg_seconds_sum', { status: 'SUCCESS' }), 4);
  assert.equal(valueOf(s, 'ffop_command_total_seconds_sum', { status: 'SUCCESS' }), 12);
  assert.equal(valueOf(s, 'ffop_command_total_seconds_count', { status: 'FAILED' }), 2);
});

test('a clock that went backwards never observes a negative duration', async () => {
  const metrics = createMetrics();
  metrics.engine.commandAdmitted('pro', -0.5);
  const s = await scrape(metrics);
  assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_sum', { plan: 'pro' }), 0);
});

test('file tasks, webhook deliveries and HTTP requests', async () => {
  const metrics = createMetrics();
  metrics.engine.fileTaskEnded('store_file', 'stored');
  metrics.engine.fileTaskEnded('store_file', 'stored');
  metrics.engine.fileTaskEnded('probe_upload', 'failed');
  metrics.webhookAttempt('delivered');
  metrics.webhookAttempt('failed_attempt');
  metrics.webhookAttempt('failed_attempt');
  metrics.httpRequest('GET', '/v1/commands/:command_id', 200, 0.004);
  metrics.httpRequest('GET', '/v1/commands/:command_id', 200, 0.02);
  metrics.httpRequest('GET', '/v1/commands/:command_id', 404, 0.001);
  metrics.httpRequest('PROPFIND', 'unmatched', 404, 0.001);
  const s = await scrape(metrics);

  assert.equal(valueOf(s, 'ffop_file_tasks_total', { kind: 'store_file', outcome: 'stored' }), 2);
  assert.equal(valueOf(s, 'ffop_file_tasks_total', { kind: 'probe_upload', outcome: 'failed' }), 1);
  assert.equal(valueOf(s, 'ffop_webhook_deliveries_total', { outcome: 'delivered' }), 1);
  assert.equal(valueOf(s, 'ffop_webhook_deliveries_total', { outcome: 'failed_attempt' }), 2);
  assert.equal(
    valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: '/v1/commands/:command_id', status: '200' }),
    2,
  );
  assert.equal(
    valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: '/v1/commands/:command_id', status: '404' }),
    1,
  );
  assert.equal(
    valueOf(s, 'ffop_http_request_duration_seconds_bucket', {
      method: 'GET',
      route: '/v1/commands/:command_id',
      status: '200',
      le: '0.005',
    }),
    1,
  );
  // Methods outside the usual ones share one label value.
  assert.equal(valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'other', route: 'unmatched', status: '404' }), 1);
});

test("the process's default metrics carry the ffop_ prefix; two registries in one process do not share counts", async () => {
  const a = createMetrics();
  const b = createMetrics();
  a.webhookAttempt('delivered');
  const sa = await scrape(a);
  const sb = await scrape(b);
  assert.ok(valueOf(sa, 'ffop_process_cpu_seconds_total')! >= 0);
  assert.ok(sa.some((x) => x.name === 'ffop_nodejs_heap_size_used_bytes'));
  assert.equal(valueOf(sa, 'ffop_webhook_deliveries_total', { outcome: 'delivered' }), 1);
  assert.equal(valueOf(sb, 'ffop_webhook_deliveries_total', { outcome: 'delivered' }), undefined);
  // Nothing of ours on prom-client's global registry.
  const { register } = await import('prom-client');
  assert.equal(register.getSingleMetric('ffop_webhook_deliveries_total'), undefined);
});
