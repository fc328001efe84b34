// Attacks on the runner report endpoint in cluster mode with a real Job's token, as a command that
// escaped ffmpeg in its pod could make them, while the real runner, API and operator do their work:
// a result that cannot be true fails the step saying why and spends the token; a flood is held to the
// Job's budget and the real runner still delivers its own result (it waits as 429 asks).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchV1Api } from '@kubernetes/client-node';
import { LABELS } from '../../core/k8s/names.ts';
import { jobToken } from '../../core/jobs/job-token.ts';
import { unknownMedia } from '../../core/media/unknown-media.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';

async function until<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 120_000): Promise<T> {
  for (const deadline = Date.now() + limitMs; ; await new Promise((r) => setTimeout(r, 100))) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
  }
}

describe('runner reports, cluster mode', () => {
  let svc: ClusterService;
  let batch: BatchV1Api;

  before(async () => {
    svc = await startClusterService();
    batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
  });
  after(async () => {
    await svc?.close();
  });

  const jobsOf = async (id: string) =>
    (await batch.listNamespacedJob({ namespace: svc.cluster.namespace, labelSelector: `${LABELS.commandId}=${id}` })).items;

  /** Submits `seconds` of real-time encoding and waits until its runner reports ffmpeg running; the Job's name. */
  const runningCommand = async (seconds: number) => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: `-re -f lavfi -i testsrc=size=32x32:rate=5 -t ${seconds} -c:v libx264 -preset ultrafast {{out_1}}`,
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 1,
    });
    await until('ffmpeg to run in the pod', async () => {
      const record = (await api.get(`/v1/commands/${id}`)).body;
      return record.processing_stage === 'FFMPEG_PROCESSING' ? true : undefined;
    });
    const [job] = await jobsOf(id);
    return { api, id, job: job.metadata!.name! };
  };

  /** POSTs an event for `job` with its real token, as its pod would. */
  const report = async (job: string, event: unknown) => {
    const res = await fetch(`${svc.apiUrl}/internal/v1/job-events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${jobToken(svc.tokenSecret, job)}` },
      body: JSON.stringify({ jobName: job, event }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { detail: string } };
  };

  const result = (alias: string) => ({
    type: 'result',
    ok: true,
    ffmpegSeconds: 1,
    inputBytes: 0,
    outputs: [{ alias, fileName: 'o.mp4', size: 1000, media: unknownMedia('o.mp4') }],
  });

  test('attack: a result naming an output the command did not declare is refused 422; the step fails saying why; the token is spent', async () => {
    const { api, id, job } = await runningCommand(120);
    const refused = await report(job, result('out_9'));
    assert.equal(refused.status, 422);
    const why = 'outputs.0.alias: "out_9" is not an output of this step (it writes out_1)';
    assert.equal(refused.body.detail, why);

    const { record } = await api.waitForEnd(id, 120_000);
    assert.deepEqual(
      [record.status, record.error_status, record.error_message],
      ['FAILED', 'INTERNAL_ERROR', `the runner's result was refused: ${why}`],
    );
    assert.deepEqual(record.output_files ?? {}, {}, 'nothing of the refused result is stored');
    // The step ended: its token reports nothing more, a proper-looking result included.
    assert.equal((await report(job, result('out_1'))).status, 409);
    assert.equal((await report(job, { type: 'stage', stage: 'UPLOADING' })).status, 409);
    await until('the Job to be deleted', async () => ((await jobsOf(id)).length === 0 ? true : undefined));
  });

  test("attack: a flood with the Job's token gets 429 with Retry-After; the real runner's own result still arrives", async () => {
    const { api, id, job } = await runningCommand(6);
    const progress = { type: 'progress', outTimeSeconds: 1, speed: null, durationSeconds: null };
    let refused: Awaited<ReturnType<typeof report>> | undefined;
    for (let sent = 0; !refused && sent < 5000; sent++) {
      const res = await report(job, progress);
      if (res.status === 429) refused = res;
      else assert.equal(res.status, 200);
    }
    assert.ok(refused, 'the budget held the flood');
    assert.match(refused.body.detail, /too many reports for this Job; retry after \d+ s/);
    assert.ok(Number(refused.retryAfter) >= 1);
    const { record } = await api.waitForEnd(id, 120_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.ok(record.output_files.out_1.storage_url, JSON.stringify(record.output_files));
  });
});
