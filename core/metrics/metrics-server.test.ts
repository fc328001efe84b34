// Cluster mode's metrics port, scraped over real HTTP on 127.0.0.1.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { createMetrics } from './metrics.ts';
import { metricsServerSettings, OPERATOR_METRICS_PORT, startMetricsServer } from './metrics-server.ts';
import { parsePrometheusText, valueOf } from './testing/prometheus-text.ts';

const logger = createLogger('silent');

async function withServer(token: string | null, check: (url: string) => Promise<void>): Promise<void> {
  const metrics = createMetrics();
  metrics.engine.commandEnded('SUCCESS', null, 1, 2);
  const server = await startMetricsServer({ registry: metrics.registry, host: '127.0.0.1', port: 0, token, logger });
  try {
    await check(server.url);
  } finally {
    await server.close();
  }
}

describe('the metrics server', () => {
  test('without a token: GET /metrics answers the text format; /healthz; 404 and 405 elsewhere', () =>
    withServer(null, async (url) => {
      const res = await fetch(`${url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
      const samples = parsePrometheusText(await res.text());
      assert.equal(valueOf(samples, 'ffop_commands_finished_total', { status: 'SUCCESS' }), 1);
      assert.ok(samples.some((s) => s.name === 'ffop_process_resident_memory_bytes'));

      const head = await fetch(`${url}/metrics`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok' });
      const missing = await fetch(`${url}/v1/commands`);
      assert.equal(missing.status, 404);
      assert.deepEqual(await missing.json(), { detail: 'Not Found' });
      const posted = await fetch(`${url}/metrics`, { method: 'POST', body: 'x' });
      assert.equal(posted.status, 405);
      assert.equal(posted.headers.get('allow'), 'GET, HEAD');
    }));

  test('attack: with FFOP_METRICS_TOKEN, only the exact bearer token reads /metrics', () =>
    withServer('s3cret-metrics-token', async (url) => {
      for (const authorization of [
        undefined,
        'Bearer wrong',
        'Bearer s3cret-metrics-token-and-more',
        'Bearer s3cret-metrics',
        'Basic czNjcmV0LW1ldHJpY3MtdG9rZW4=',
        's3cret-metrics-token',
        'Bearer  ',
      ]) {
        const res = await fetch(`${url}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
        assert.equal(res.status, 401, `authorization ${authorization}`);
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
        const body = await res.text();
        assert.match(body, /Bearer <FFOP_METRICS_TOKEN>/);
        assert.doesNotMatch(body, /ffop_/);
      }
      for (const authorization of ['Bearer s3cret-metrics-token', 'bearer s3cret-metrics-token']) {
        const res = await fetch(`${url}/metrics`, { headers: { authorization } });
        assert.equal(res.status, 200, authorization);
        assert.match(await res.text(), /ffop_commands_finished_total\{status="SUCCESS"\} 1/);
      }
      // Liveness needs no token.
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
    }));

  test('a taken port fails the start with the error', async () => {
    const metrics = createMetrics();
    const first = await startMetricsServer({ registry: metrics.registry, host: '127.0.0.1', port: 0, token: null, logger });
    try {
      const port = Number(new URL(first.url).port);
      await assert.rejects(startMetricsServer({ registry: metrics.registry, host: '127.0.0.1', port, token: null, logger }), /EADDRINUSE/);
    } finally {
      await first.close();
    }
  });
});

describe('metrics settings', () => {
  test('defaults: 127.0.0.1 and the process default port, no token', () => {
    assert.deepEqual(metricsServerSettings(loadConfig({}), OPERATOR_METRICS_PORT), { host: '127.0.0.1', port: 9464, token: null });
  });
  test('FFOP_METRICS_HOST, FFOP_METRICS_PORT, FFOP_METRICS_TOKEN; "off" runs no server', () => {
    const env = { FFOP_METRICS_HOST: '0.0.0.0', FFOP_METRICS_PORT: '9100', FFOP_METRICS_TOKEN: 't' };
    assert.deepEqual(metricsServerSettings(loadConfig(env), OPERATOR_METRICS_PORT), { host: '0.0.0.0', port: 9100, token: 't' });
    assert.equal(metricsServerSettings(loadConfig({ FFOP_METRICS_PORT: 'off' }), OPERATOR_METRICS_PORT), null);
  });
  test('attack: without a token, metrics on a host other machines reach are refused at start; loopback ones are not', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'metrics.example.com']) {
      assert.throws(
        () => metricsServerSettings(loadConfig({ FFOP_METRICS_HOST: host }), OPERATOR_METRICS_PORT),
        /FFOP_METRICS_TOKEN must be set when FFOP_METRICS_HOST \(.+\) is not a loopback address/,
        host,
      );
    }
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
      assert.equal(metricsServerSettings(loadConfig({ FFOP_METRICS_HOST: host }), OPERATOR_METRICS_PORT)?.token, null, host);
    }
    assert.equal(
      metricsServerSettings(loadConfig({ FFOP_METRICS_HOST: '0.0.0.0', FFOP_METRICS_PORT: 'off' }), OPERATOR_METRICS_PORT),
      null,
    );
  });
  test('a port that is not one is refused at start, naming the setting', () => {
    for (const bad of ['x', '70000', '-1', '80.5']) {
      assert.throws(() => loadConfig({ FFOP_METRICS_PORT: bad }), /FFOP_METRICS_PORT must be a port number or "off"/);
    }
  });
});
