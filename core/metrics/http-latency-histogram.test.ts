import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { HttpLatencyHistogram } from './http-latency-histogram.ts';

const NAME = 'http_seconds';
const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVATIONS: [method: string, route: string, status: number, seconds: number][] = [
  ['GET', '/v1/commands/:command_id', 200, 0.0005],
  ['GET', '/v1/commands/:command_id', 200, 0.001],
  ['GET', '/v1/commands/:command_id', 200, 0.05],
  ['GET', '/v1/commands/:command_id', 404, 3],
  ['POST', '/v1/run-ffmpeg-command', 200, 0.02],
  ['PROPFIND', 'unmatched', 405, 0.002],
  ['BREW', 'unmatched', 405, 0.2],
  ['HEAD', '/v1/commands/:command_id', 200, 0.1],
];

test("prints what prom-client's Histogram prints for the same observations", async () => {
  const ours = new Registry();
  const histogram = new HttpLatencyHistogram({ name: NAME, help: 'latency', buckets: BUCKETS, registry: ours });
  const reference = new Registry();
  const promClient = new Histogram({
    name: NAME,
    help: 'latency',
    labelNames: ['method', 'route', 'status'],
    buckets: BUCKETS,
    registers: [reference],
  });
  for (const [method, route, status, seconds] of OBSERVATIONS) {
    histogram.observe(method, route, status, seconds);
    const known = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].includes(method);
    promClient.observe({ method: known ? method : 'other', route, status }, seconds);
  }
  const text = await ours.metrics();
  assert.equal(text, await reference.metrics());
  assert.match(text, /http_seconds_bucket\{le="0.001",method="GET",route="\/v1\/commands\/:command_id",status="200"\} 2/);
  assert.match(text, /http_seconds_count\{method="other",route="unmatched",status="405"\} 2/);
});

test('reset forgets every series', async () => {
  const registry = new Registry();
  const histogram = new HttpLatencyHistogram({ name: NAME, help: 'latency', buckets: BUCKETS, registry });
  histogram.observe('GET', '/x', 200, 0.5);
  registry.resetMetrics();
  assert.doesNotMatch(await registry.metrics(), /http_seconds_count/);
  histogram.observe('GET', '/x', 200, 0.5);
  assert.match(await registry.metrics(), /http_seconds_count\{method="GET",route="\/x",status="200"\} 1/);
});
