// Progress and cancel in cluster mode: the runner's progress reaches the poll record and the
// FfmpegCommand's status through the API and the operator; POST .../cancel deletes the running Job
// (its pod's process stops) and the command ends CANCELLED.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { BatchV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { GROUP, LABELS, PLURAL, VERSION } from '../../core/k8s/names.ts';
import type { FfmpegCommandObject } from '../../core/k8s/ffmpeg-command.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';

const run = promisify(execFile);

async function until<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 120_000): Promise<T> {
  for (const deadline = Date.now() + limitMs; ; await new Promise((r) => setTimeout(r, 100))) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
  }
}

/** Processes whose command line names `marker` (the pod's ffmpeg, and bubblewrap around it). */
async function processesNaming(marker: string): Promise<string[]> {
  try {
    return (await run('pgrep', ['-f', marker])).stdout.trim().split('\n');
  } catch (err) {
    if ((err as { code?: number }).code === 1) return [];
    throw err;
  }
}

describe('progress and cancel, cluster mode', () => {
  let svc: ClusterService;
  let batch: BatchV1Api;
  let custom: CustomObjectsApi;

  before(async () => {
    svc = await startClusterService();
    batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
    custom = svc.cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  });
  after(async () => {
    await svc?.close();
  });

  const resource = async (id: string) =>
    (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: svc.cluster.namespace,
      plural: PLURAL,
      name: id,
    })) as FfmpegCommandObject;
  const jobsOf = async (id: string) =>
    (await batch.listNamespacedJob({ namespace: svc.cluster.namespace, labelSelector: `${LABELS.commandId}=${id}` })).items;

  test('progress shows in the poll and the FfmpegCommand status; cancel deletes the Job and FAILS it CANCELLED', async () => {
    const api = svc.client();
    const marker = `ffopmark${randomBytes(6).toString('hex')}`;
    const id = await api.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=5 -t 60 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: `long_${marker}.mp4` },
      vcpu_count: 1,
    });

    const polled = await until('progress in the poll record', async () => {
      const record = (await api.get(`/v1/commands/${id}`)).body;
      return record.progress?.percent > 0 ? record : undefined;
    });
    assert.equal(polled.status, 'PROCESSING');
    assert.ok(polled.progress.percent < 100 && polled.progress.out_time_seconds > 0, JSON.stringify(polled.progress));

    const mirrored = await until('progress in the FfmpegCommand status', async () => {
      const status = (await resource(id)).status;
      return status?.progress?.percent ? status : undefined;
    });
    assert.equal(mirrored.phase, 'PROCESSING');
    assert.ok(mirrored.progress!.percent! > 0 && mirrored.progress!.percent! < 100, JSON.stringify(mirrored.progress));
    assert.ok(mirrored.progress!.outTimeSeconds > 0);
    const [job] = await jobsOf(id);
    assert.ok(job, 'the step runs as a Job');
    assert.ok((await processesNaming(marker)).length > 0, "the pod's ffmpeg runs");

    const cancel = await api.post(`/v1/commands/${id}/cancel`, undefined);
    assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
    const { record } = await api.waitForEnd(id, 60_000);
    assert.deepEqual([record.status, record.error_status, record.error_message], ['FAILED', 'CANCELLED', 'cancelled through the API']);
    assert.equal(record.progress, null);

    await until('the Job to be deleted', async () => ((await jobsOf(id)).length === 0 ? true : undefined));
    await until("the pod's ffmpeg to stop", async () => ((await processesNaming(marker)).length === 0 ? true : undefined));
    const ended = await until('the status to show the end', async () => {
      const status = (await resource(id)).status;
      return status?.phase === 'FAILED' ? status : undefined;
    });
    assert.equal(ended.errorStatus, 'CANCELLED');
    assert.equal(ended.progress, undefined, 'no progress once ended');

    const again = await api.post(`/v1/commands/${id}/cancel`, undefined);
    assert.equal(again.status, 409);
  });

  test('a QUEUED command is cancelled before any Job exists', async () => {
    const api = svc.client(await svc.newAccount('free')); // 4 vCPUs: a 3-vCPU command holds the second back
    const body = {
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=5 -t 60 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 3,
    };
    const running = await api.submit(body);
    const queued = await api.submit(body);
    await until('the first command to run', async () =>
      (await api.get(`/v1/commands/${running}`)).body.status === 'PROCESSING' ? true : undefined,
    );
    assert.equal((await api.get(`/v1/commands/${queued}`)).body.status, 'QUEUED');
    assert.equal((await api.post(`/v1/commands/${queued}/cancel`, undefined)).status, 202);
    const { record, seen } = await api.waitForEnd(queued, 60_000);
    assert.deepEqual([record.status, record.error_status], ['FAILED', 'CANCELLED']);
    assert.ok(!seen.some((s) => s.startsWith('PROCESSING')), seen.join(' '));
    assert.deepEqual(await jobsOf(queued), []);

    assert.equal((await api.post(`/v1/commands/${running}/cancel`, undefined)).status, 202);
    assert.equal((await api.waitForEnd(running, 60_000)).record.error_status, 'CANCELLED');
    await until('the Job to be deleted', async () => ((await jobsOf(running)).length === 0 ? true : undefined));
  });
});
