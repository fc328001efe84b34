// Idempotency keys in cluster mode, across two API replicas with database connections of their own:
// the same Idempotency-Key sent to both at once creates one command and one FfmpegCommand, and every
// answer names it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { startClusterApi } from '../../api/cluster/start-cluster-api.ts';
import { openDatabase, type Database } from '../../core/db/database.ts';
import { SERVICE_ACCOUNTS, GROUP, PLURAL, VERSION } from '../../core/k8s/names.ts';
import { createLogger } from '../../core/logger.ts';
import { ApiClient, freePort } from '../harness.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';

const CHEAP = { ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}', output_files: { out_1: 'a.png' } };

describe('idempotency keys, cluster mode', () => {
  let svc: ClusterService;
  let secondDatabase: Database;
  let second: Awaited<ReturnType<typeof startClusterApi>>;

  before(async () => {
    svc = await startClusterService();
    // A second replica: its own process state and its own connections to the same database.
    secondDatabase = await openDatabase(svc.databaseUrl);
    second = await startClusterApi({
      kubeconfig: await svc.cluster.serviceAccountKubeConfig(SERVICE_ACCOUNTS.api, svc.cluster.namespace),
      namespace: svc.cluster.namespace,
      database: secondDatabase,
      storage: svc.storage,
      logger: createLogger(process.env.FFOP_TEST_LOG_LEVEL ?? 'silent'),
      tokenSecret: svc.tokenSecret,
      host: '127.0.0.1',
      port: await freePort(),
      uploadTtlSeconds: 3600,
    });
  });
  after(async () => {
    await second?.close();
    await secondDatabase?.close();
    await svc?.close();
  });

  test('the same key sent to two API replicas at once: one command, one FfmpegCommand, the same command_id everywhere', async () => {
    const key = await svc.newAccount('pro');
    const replicas = [svc.client(key), new ApiClient(second.url, key)];
    const headers = { 'Idempotency-Key': 'cluster-order-1' };
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => replicas[i % 2].request('POST', '/v1/run-ffmpeg-command', CHEAP, headers)),
    );
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]), JSON.stringify(answers.map((a) => a.body)));
    const ids = new Set(answers.map((a) => a.body.command_id));
    assert.equal(ids.size, 1);
    const [id] = ids;
    assert.equal(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true').length, 19);
    console.log(`20 requests with one Idempotency-Key over 2 API replicas: ${ids.size} command_id`);

    // Both replicas list exactly that command; it runs once, as one FfmpegCommand.
    for (const r of replicas) {
      assert.deepEqual(
        (await r.get('/v1/commands')).body.map((c: { command_id: string }) => c.command_id),
        [id],
      );
    }
    const custom = svc.cluster.kubeconfig.makeApiClient(CustomObjectsApi);
    const listObjects = async () =>
      (
        (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: svc.cluster.namespace, plural: PLURAL })) as {
          items: { metadata: { name: string } }[];
        }
      ).items.map((o) => o.metadata.name);
    let names = await listObjects();
    for (const deadline = Date.now() + 60_000; names.length === 0; names = await listObjects()) {
      if (Date.now() > deadline) assert.fail('no FfmpegCommand was created');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(names.length, 1, JSON.stringify(names));
    assert.equal((await replicas[1].waitForEnd(id, 120_000)).record.status, 'SUCCESS');

    // A replay from the other replica after the end, and a different body refused by both.
    const late = await replicas[0].request('POST', '/v1/run-ffmpeg-command', CHEAP, headers);
    assert.deepEqual([late.status, late.body.command_id, late.headers.get('idempotent-replayed')], [200, id, 'true']);
    for (const r of replicas) {
      const other = await r.request('POST', '/v1/run-ffmpeg-command', { ...CHEAP, metadata: { n: 2 } }, headers);
      assert.equal(other.status, 422);
      assert.deepEqual(other.body.detail[0].loc, ['header', 'Idempotency-Key']);
    }
  });
});
