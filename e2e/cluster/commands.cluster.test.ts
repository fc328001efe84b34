// Cluster mode end to end through the HTTP API: FfmpegCommands, Jobs, the real Job controller.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchV1Api, CustomObjectsApi, type V1Job } from '@kubernetes/client-node';
import { GROUP, LABELS, PLURAL, VERSION } from '../../core/k8s/names.ts';
import { readRunnerEnv } from '../../core/jobs/runner-contract.ts';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { makeClip, startMediaServer, type MediaServer } from '../harness.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';

describe('cluster mode', () => {
  let svc: ClusterService;
  let media: MediaServer;
  let batch: BatchV1Api;
  let custom: CustomObjectsApi;
  const jobsOf = async (commandId: string): Promise<V1Job[]> =>
    (await batch.listNamespacedJob({ namespace: svc.cluster.namespace, labelSelector: `${LABELS.commandId}=${commandId}` })).items;
  const seenJobs = new Map<string, V1Job>();

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
    svc = await startClusterService({ allow: [media.allowEntry] });
    batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
    custom = svc.cluster.kubeconfig.makeApiClient(CustomObjectsApi);
    // Record every Job as it appears: the operator deletes finished ones.
    let listing = false; // one list at a time: a slow answer must not pile up requests
    const timer = setInterval(() => {
      if (listing) return;
      listing = true;
      batch
        .listNamespacedJob({ namespace: svc.cluster.namespace })
        .then((list) => list.items.forEach((j) => seenJobs.set(j.metadata!.name!, j)))
        .catch(() => {}) // the cluster is stopping
        .finally(() => (listing = false));
    }, 100);
    timer.unref();
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  test('a single command: FfmpegCommand, one Job as specified, SUCCESS in the API, status mirrored, Job collected', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      vcpu_count: 2,
      max_command_run_seconds: 120,
    });
    const { record, seen } = await api.waitForEnd(id, 120_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.ok(seen.some((s) => s.startsWith('PROCESSING')));
    assert.equal(record.output_files.out_1.width, 160);
    assert.equal((await fetch(record.output_files.out_1.storage_url)).status, 200);

    const job = [...seenJobs.values()].find((j) => j.metadata?.labels?.[LABELS.commandId] === id)!;
    assert.ok(job, 'the Job was seen');
    const container = job.spec!.template.spec!.containers[0];
    assert.equal(container.resources!.requests!.cpu, '2');
    assert.equal(container.resources!.limits!.cpu, '2');
    assert.equal(container.resources!.limits!['ephemeral-storage'], '100Gi');
    // ffmpeg's memory rlimit (4 GiB by default) plus room for the runner.
    assert.equal(container.resources!.limits!.memory, '4608Mi');
    const env = readRunnerEnv(Object.fromEntries(container.env!.map((e) => [e.name, e.value])));
    assert.equal(env.maxMemoryBytes, 4 * 1024 ** 3);
    assert.equal(env.maxOutputFiles, 1000);
    assert.equal(env.confinement, 'bwrap-or-pod');
    assert.equal(job.spec!.template.spec!.volumes![0].emptyDir!.sizeLimit, '100Gi');
    assert.equal(job.spec!.backoffLimit, 0);
    assert.equal(job.spec!.activeDeadlineSeconds, 60 + 120 + 60);
    assert.ok(job.spec!.ttlSecondsAfterFinished! > 0);
    assert.equal(job.metadata!.ownerReferences![0].kind, 'FfmpegCommand');
    assert.equal(job.metadata!.ownerReferences![0].name, id);
    assert.equal(job.metadata!.labels![LABELS.step], '0');
    assert.ok(job.metadata!.labels![LABELS.account]);
    assert.equal(job.spec!.template.spec!.automountServiceAccountToken, false);

    // The resource's status mirrors the database.
    let status: any;
    for (let i = 0; i < 50; i++) {
      const obj: any = await custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: svc.cluster.namespace,
        plural: PLURAL,
        name: id,
      });
      status = obj.status;
      if (status?.phase === 'SUCCESS') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status.phase, 'SUCCESS');
    assert.equal(status.outputs[0].alias, 'out_1');
    // Finished Jobs are deleted (their pods with them).
    for (let i = 0; i < 100 && (await jobsOf(id)).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await jobsOf(id), []);
    const printed = await svc.cluster.kubectl(['get', 'ffmpegcommands', id]);
    assert.match(printed.stdout, /SUCCESS/);
  });

  test('a three-step chain runs three Jobs, in order', async () => {
    const api = svc.client();
    const id = await api.submit(
      {
        ffmpeg_commands: [
          '-i {{in_1}} -t 1 -c:v libx264 -preset ultrafast -an {{out_a}}',
          '-i {{out_a}} -vf scale=64:48 -c:v libx264 -preset ultrafast {{out_b}}',
          '-i {{out_b}} -frames:v 1 {{out_c}}',
        ],
        input_files: { in_1: `${media.url}/clip.mp4` },
        output_files: { out_a: 'a.mp4', out_b: 'b.mp4', out_c: 'c.png' },
        vcpu_count: 1,
      },
      '/v1/run-chained-ffmpeg-commands',
    );
    const { record } = await api.waitForEnd(id, 180_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    // ffmpeg's log of each step came through the runner reports (job events) and the operator.
    const log = await api.get(`/v1/commands/${id}/log`);
    assert.equal(log.status, 200);
    assert.match(
      log.body,
      /--- step 1 of 3 ---\n[\s\S]*Output #0[\s\S]*--- step 2 of 3 ---\n[\s\S]*Output #0[\s\S]*--- step 3 of 3 ---\n[\s\S]*Output #0/,
    );
    const jobs = [...seenJobs.values()].filter((j) => j.metadata?.labels?.[LABELS.commandId] === id);
    assert.deepEqual(jobs.map((j) => j.metadata!.labels![LABELS.step]).sort(), ['0', '1', '2']);
    const created = jobs.sort((a, b) => Number(a.metadata!.labels![LABELS.step]) - Number(b.metadata!.labels![LABELS.step]));
    for (let i = 1; i < created.length; i++) {
      assert.ok(
        new Date(created[i].metadata!.creationTimestamp!).getTime() >= new Date(created[i - 1].metadata!.creationTimestamp!).getTime(),
      );
    }
    assert.equal(record.output_files.out_c.width, 64);
    // The runners' measured phases came through their reports: every step's timings are known.
    assert.deepEqual(
      record.timings.steps.map((s: { step: number }) => s.step),
      [1, 2, 3],
    );
    for (const step of record.timings.steps) {
      for (const phase of ['queued_seconds', 'download_seconds', 'ffmpeg_seconds', 'upload_seconds']) {
        assert.ok(typeof step[phase] === 'number' && step[phase] >= 0, `${phase} of ${JSON.stringify(step)}`);
      }
    }
    assert.equal(record.timings.ffmpeg_seconds, record.ffmpeg_command_run_seconds);
  });

  test('an ffmpeg failure and a run past max_command_run_seconds FAIL with their error statuses', async () => {
    const api = svc.client();
    const bad = await api.submit({
      ffmpeg_command: '-f lavfi -i testsrc=d=0.2 -c:v nosuchcodec {{out_1}}',
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 1,
    });
    const slow = await api.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=5 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 1,
      max_command_run_seconds: 2,
    });
    const r1 = (await api.waitForEnd(bad, 120_000)).record;
    assert.equal(r1.error_status, 'FFMPEG_FAILED');
    assert.match(r1.error_message, /nosuchcodec/);
    const r2 = (await api.waitForEnd(slow, 120_000)).record;
    assert.equal(r2.error_status, 'FFMPEG_TIMEOUT');
  });

  test('admission holds a second command QUEUED until the first finishes', async () => {
    // 4 vCPUs like 'free', with a rate limit the 20 polls a second of a slow run cannot reach.
    await new PlansRepo(svc.database.db).create({
      name: 'admission-test',
      maxVcpus: 4,
      maxCommandRunSeconds: 600,
      requestsPerMinute: 1_000_000,
      storageQuotaBytes: 1e9,
      processingQuotaBytesPerMonth: 1e9,
      privateFiles: false,
    });
    const api = svc.client(await svc.newAccount('admission-test'));
    const body = {
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=10:duration=2 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 3,
    };
    const first = await api.submit(body);
    const second = await api.submit(body);
    let sawHeld = false;
    for (let i = 0; i < 600; i++) {
      const [a, b] = await Promise.all([api.get(`/v1/commands/${first}`), api.get(`/v1/commands/${second}`)]);
      assert.ok(!(a.body.status === 'PROCESSING' && b.body.status === 'PROCESSING'), 'both ran at once');
      if (a.body.status === 'PROCESSING' && b.body.status === 'QUEUED') sawHeld = true;
      if (b.body.status === 'SUCCESS' || b.body.status === 'FAILED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(sawHeld);
    assert.equal((await api.waitForEnd(second, 60_000)).record.status, 'SUCCESS');
  });

  test('restarting the operator in the middle of a chain changes nothing and duplicates no Job', async () => {
    const api = svc.client();
    const id = await api.submit(
      {
        ffmpeg_commands: [
          '-re -f lavfi -i testsrc=size=32x32:rate=10:duration=2 -c:v libx264 -preset ultrafast {{out_a}}',
          '-i {{out_a}} -c:v libx264 -preset ultrafast {{out_b}}',
        ],
        output_files: { out_a: 'a.mp4', out_b: 'b.mp4' },
        vcpu_count: 1,
      },
      '/v1/run-chained-ffmpeg-commands',
    );
    for (let i = 0; i < 600; i++) {
      if ((await api.get(`/v1/commands/${id}`)).body.processing_stage === 'FFMPEG_PROCESSING') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await svc.restartOperator();
    const { record } = await api.waitForEnd(id, 120_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const names = [...seenJobs.keys()].filter((n) => n.includes(id));
    assert.deepEqual(names.sort(), [`ffc-${id}-s0-a1`, `ffc-${id}-s1-a1`]);
  });

  test('a command stored without its FfmpegCommand (the API died in between) is picked up by the operator', async () => {
    const caller = (await new AccountsRepo(svc.database.db).authenticate(svc.key))!;
    const row = testCommandRow(caller, {
      ffmpeg_command: '-f lavfi -i testsrc=size=32x32:duration=0.3 -c:v libx264 -preset ultrafast {{out_1}}',
    });
    await new CommandsRepo(svc.database.db).insert(row); // stored, never dispatched
    const { record } = await svc.client().waitForEnd(row.id, 60_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const read = async (): Promise<any> =>
      custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: svc.cluster.namespace, plural: PLURAL, name: row.id });
    let obj = await read();
    for (let i = 0; i < 200 && obj.status?.phase !== 'SUCCESS'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      obj = await read();
    }
    // The user-facing spec, made from the stored request; the labels say whose it is.
    assert.equal(obj.spec.command, row.originalRequest.ffmpeg_command);
    assert.equal(obj.metadata.labels[LABELS.account], caller.account.id);
    assert.equal(obj.status.commandId, row.id);
  });

  test('deleting an FfmpegCommand stops its Job and FAILS the command with CANCELLED', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=5 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 1,
    });
    for (let i = 0; i < 600; i++) {
      if ((await api.get(`/v1/commands/${id}`)).body.processing_stage === 'FFMPEG_PROCESSING') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: svc.cluster.namespace,
      plural: PLURAL,
      name: id,
    });
    const { record } = await api.waitForEnd(id, 60_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'CANCELLED');
    for (let i = 0; i < 100 && (await jobsOf(id)).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await jobsOf(id), []);
  });
});
