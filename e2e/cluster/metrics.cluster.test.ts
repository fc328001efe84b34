// Cluster mode's metrics: the operator's metrics port shows the commands it ran and the state gauges
// (the leading replica only), the API's own metrics port its HTTP latency; neither is on the API's port.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startClusterApi } from '../../api/cluster/start-cluster-api.ts';
import { testConfinement } from '../../core/confine/testing/test-confinement.ts';
import { SERVICE_ACCOUNTS } from '../../core/k8s/names.ts';
import { createLogger } from '../../core/logger.ts';
import { FileProber } from '../../core/media/file-prober.ts';
import { createMetrics } from '../../core/metrics/metrics.ts';
import { startMetricsServer, type MetricsServer } from '../../core/metrics/metrics-server.ts';
import { parsePrometheusText, valueOf, type Sample } from '../../core/metrics/testing/prometheus-text.ts';
import { startOperator, type RunningOperator } from '../../operator/operator.ts';
import { ApiClient, freePort } from '../harness.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';

const TOKEN = 'cluster-metrics-token';

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200);
  return parsePrometheusText(await res.text());
}

describe('metrics in cluster mode', () => {
  let svc: ClusterService;
  const operators: RunningOperator[] = [];
  const servers: MetricsServer[] = [];
  const logger = createLogger('silent');
  let workDir = '';

  /** An operator replica as operator/main.ts runs it: its own registry, served on a metrics port. */
  const launch = async (identity: string) => {
    const { confinement, uids } = await testConfinement();
    const metrics = createMetrics();
    const operator = startOperator({
      prober: new FileProber({ confinement, uids }),
      kubeconfig: svc.operatorKubeConfig,
      namespace: svc.cluster.namespace,
      database: svc.database,
      storage: svc.storage,
      logger,
      identity,
      runnerImage: 'ffmpeg-operator-runner:test',
      reportUrl: `${svc.apiUrl}/internal/v1/job-events`,
      tokenSecret: svc.tokenSecret,
      settings: {
        downloadMaxBytes: 1e9,
        downloadTimeoutSeconds: 60,
        uploadAllowanceSeconds: 60,
        allowAddresses: [],
        workDir: join(workDir, identity),
        abandonedUploadSeconds: 7 * 86400,
      },
      leaseSeconds: 4,
      runnerWorkRoot: svc.podsDir,
      metrics,
    });
    operators.push(operator);
    const server = await startMetricsServer({ registry: metrics.registry, host: '127.0.0.1', port: 0, token: TOKEN, logger });
    servers.push(server);
    return { operator, url: server.url };
  };

  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'ffop-cluster-metrics-'));
    svc = await startClusterService({ withOperator: false });
  });
  after(async () => {
    for (const o of operators) await o.stop().catch(() => {});
    for (const s of servers) await s.close();
    await svc?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  test("the leading operator's port: a command's end, its queue wait, the gauges; a standby shows none of them", async () => {
    const leader = await launch('metrics-operator-1');
    await leader.operator.leading;
    const standby = await launch('metrics-operator-2');

    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-f lavfi -i testsrc=size=64x48:rate=5:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'tiny.mp4' },
      vcpu_count: 1,
    });
    assert.equal((await api.waitForEnd(id, 120_000)).record.status, 'SUCCESS');
    let s = await scrape(leader.url);
    for (const deadline = Date.now() + 15_000; valueOf(s, 'ffop_commands_finished_total', { status: 'SUCCESS' }) !== 1;) {
      if (Date.now() > deadline) assert.fail('the operator never counted the command');
      await new Promise((r) => setTimeout(r, 100));
      s = await scrape(leader.url);
    }
    assert.equal(valueOf(s, 'ffop_command_queue_wait_seconds_count', { plan: 'pro' }), 1);
    assert.equal(valueOf(s, 'ffop_command_ffmpeg_seconds_count', { status: 'SUCCESS' }), 1);
    assert.equal(valueOf(s, 'ffop_commands', { status: 'PROCESSING' }), 0);
    assert.equal(valueOf(s, 'ffop_vcpus_in_use'), 0);
    assert.equal(valueOf(s, 'ffop_queue_depth', { plan: 'pro' }), 0);
    assert.equal(valueOf(s, 'ffop_webhook_deliveries_pending'), 0);

    const waiting = await scrape(standby.url);
    assert.ok(
      waiting.some((x) => x.name === 'ffop_process_cpu_seconds_total'),
      'a standby shows its process',
    );
    for (const name of ['ffop_commands', 'ffop_vcpus_in_use', 'ffop_queue_depth', 'ffop_commands_finished_total']) {
      assert.ok(!waiting.some((x) => x.name === name), `a standby shows no ${name}`);
    }
  });

  test("the API's metrics port: HTTP latency by route; /metrics is not on the API's own port", async () => {
    const port = await freePort();
    const apiKc = await svc.cluster.serviceAccountKubeConfig(SERVICE_ACCOUNTS.api, svc.cluster.namespace);
    const api = await startClusterApi({
      kubeconfig: apiKc,
      namespace: svc.cluster.namespace,
      database: svc.database,
      storage: svc.storage,
      logger,
      tokenSecret: svc.tokenSecret,
      host: '127.0.0.1',
      port,
      uploadTtlSeconds: 3600,
      metricsServer: { host: '127.0.0.1', port: 0, token: TOKEN },
    });
    try {
      assert.ok(api.metricsUrl);
      assert.equal((await new ApiClient(api.url, svc.key).get('/v1/commands')).status, 200);
      assert.equal((await fetch(`${api.url}/metrics`)).status, 404);
      assert.equal((await fetch(`${api.metricsUrl}/metrics`)).status, 401);
      const s = await scrape(api.metricsUrl);
      assert.equal(valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: '/v1/commands', status: '200' }), 1);
      assert.equal(valueOf(s, 'ffop_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' }), 1);
      // The database's state is the operator's to show, once, not every API replica's.
      assert.ok(!s.some((x) => x.name === 'ffop_commands' || x.name === 'ffop_vcpus_in_use'));
    } finally {
      await api.close();
    }
  });
});
