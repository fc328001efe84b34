// Cluster queueing with Kueue on a real node (2 CPUs): the chart in `queueing.mode: kueue` with its
// LocalQueue, ClusterQueue (2 vCPUs of quota) and a WorkloadPriorityClass per plan, Kueue built from its
// Go module (e2e/kueue/). A burst far bigger than the quota waits QUEUED with suspended Jobs and every
// command SUCCEEDS; a plan of higher priority is released first. Run inside e2e/node/sandbox.sh.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BatchV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { LABELS } from '../../core/k8s/names.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { installOnRealNode, type InstalledService } from './installed-service.ts';

const ALLOWANCE_SECONDS = 10;
const RUN_SECONDS = 10;
const DEADLINE_SECONDS = ALLOWANCE_SECONDS + RUN_SECONDS + ALLOWANCE_SECONDS;
const QUOTA_CPUS = 2;

const slowCommand = (seconds: number) => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=d=${seconds}:s=160x120:r=10 -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: 'slow.mp4' },
  vcpu_count: 1,
  max_command_run_seconds: RUN_SECONDS,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('cluster queueing with Kueue on a real node', () => {
  let svc: InstalledService;
  let core: CoreV1Api;
  let batch: BatchV1Api;
  let commands: CommandsRepo;
  const runnerPods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: svc.namespace, labelSelector: `${LABELS.managedBy}=ffmpeg-operator,${LABELS.commandId}` }))
      .items;

  before(async () => {
    svc = await installOnRealNode({
      kueue: true,
      values: {
        limits: { downloadTimeoutSeconds: ALLOWANCE_SECONDS, uploadAllowanceSeconds: ALLOWANCE_SECONDS },
        queueing: {
          mode: 'kueue',
          kueue: {
            clusterQueue: { cpu: String(QUOTA_CPUS), memory: '16Gi', ephemeralStorage: '1Ti' },
            priorityClasses: { create: true, plans: { pro: 500, low: 100, high: 1000 } },
          },
        },
      },
    });
    core = svc.cluster.kubeconfig.makeApiClient(CoreV1Api);
    batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
    commands = new CommandsRepo(svc.database.db);
    console.log(`# stage times (s): ${JSON.stringify(svc.timings)}`);
  });
  after(async () => {
    await svc?.close();
  });

  test('a burst of 4x the quota: every command SUCCEEDS; waiting ones are QUEUED with suspended Jobs; no more run than the quota', async () => {
    const api = svc.client();
    const count = 4 * QUOTA_CPUS;
    const submitted = Date.now();
    const ids = await Promise.all(Array.from({ length: count }, () => api.submit(slowCommand(5))));
    let mostRunning = 0;
    let mostQueuedSuspended = 0;
    const queuedAndRunning = new Set<string>();
    let sampling = true;
    const sample = async () => {
      const jobs = new Map(
        (await batch.listNamespacedJob({ namespace: svc.namespace, labelSelector: `${LABELS.managedBy}=ffmpeg-operator` })).items
          .filter((j) => !j.metadata?.deletionTimestamp)
          .map((j) => [j.metadata?.labels?.[LABELS.commandId], j]),
      );
      const rows = await Promise.all(ids.map((id) => commands.findById(id)));
      let queuedSuspended = 0;
      for (const r of rows) {
        if (r?.status !== 'QUEUED') continue;
        const job = jobs.get(r.id);
        if (job?.spec?.suspend) queuedSuspended++;
        // The Job was resumed a moment before the operator read it: only a Job whose pod runs while the
        // command still says QUEUED would be a lie, and only if it lasts (checked on the next sample).
        if (
          job &&
          !job.spec?.suspend &&
          (await runnerPods()).some(
            (p) => p.metadata?.labels?.[LABELS.commandId] === r.id && p.status?.containerStatuses?.[0]?.state?.running,
          )
        )
          queuedAndRunning.add(r.id);
      }
      mostQueuedSuspended = Math.max(mostQueuedSuspended, queuedSuspended);
      mostRunning = Math.max(mostRunning, (await runnerPods()).filter((p) => p.status?.containerStatuses?.[0]?.state?.running).length);
    };
    const sampler = (async () => {
      while (sampling) {
        await sample().catch((err: unknown) => console.log(`# a sample failed: ${(err as Error).message}`));
        await sleep(300);
      }
    })();
    const ends = await Promise.all(ids.map((id) => api.waitForEnd(id, 600_000)));
    const drained = (Date.now() - submitted) / 1000;
    sampling = false;
    await sampler;
    console.log(
      `# Kueue burst of ${count}: drained in ${drained.toFixed(1)} s; most running ${mostRunning}; most QUEUED with a suspended Job ${mostQueuedSuspended}`,
    );
    for (const { record } of ends)
      assert.equal(record.status, 'SUCCESS', `${record.command_id}: ${record.error_status} ${record.error_message}`);
    assert.ok(
      drained > DEADLINE_SECONDS,
      `the burst took ${drained} s: longer than a deadline (${DEADLINE_SECONDS} s) would allow if waiting counted`,
    );
    assert.ok(mostRunning <= QUOTA_CPUS, `${mostRunning} ran at once`);
    assert.ok(
      mostQueuedSuspended >= count - QUOTA_CPUS - 1,
      `commands waited QUEUED with suspended Jobs (most at once: ${mostQueuedSuspended})`,
    );
    for (const id of queuedAndRunning) {
      const row = (await commands.findById(id))!;
      assert.notEqual(row.status, 'QUEUED', `${id} ran while it said QUEUED`);
    }
  });

  test("a plan of higher priority goes first: Kueue releases its commands before a lower plan's older ones", async () => {
    const plans = new PlansRepo(svc.database.db);
    const limits = {
      maxVcpus: 16,
      maxCommandRunSeconds: 600,
      requestsPerMinute: 1200,
      storageQuotaBytes: 1e12,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: false,
    };
    await plans.create({ name: 'low', ...limits, priority: 0 });
    await plans.create({ name: 'high', ...limits, priority: 50 });
    const low = svc.client(await svc.newAccount('low'));
    const high = svc.client(await svc.newAccount('high'));
    const filling = await Promise.all(Array.from({ length: QUOTA_CPUS }, () => low.submit(slowCommand(8))));
    for (const deadline = Date.now() + 120_000; ; await sleep(200)) {
      const rows = await Promise.all(filling.map((id) => commands.findById(id)));
      if (rows.every((r) => r?.status === 'PROCESSING')) break;
      assert.ok(Date.now() < deadline, 'the quota did not fill');
    }
    const lowWaiting = [await low.submit(slowCommand(3)), await low.submit(slowCommand(3))];
    await sleep(1000);
    const highWaiting = await Promise.all([high.submit(slowCommand(3)), high.submit(slowCommand(3))]);
    const all = [...filling, ...lowWaiting, ...highWaiting];
    await Promise.all([
      ...[...filling, ...lowWaiting].map((id) => low.waitForEnd(id, 300_000)),
      ...highWaiting.map((id) => high.waitForEnd(id, 300_000)),
    ]);
    for (const id of all) {
      const row = (await commands.findById(id))!;
      assert.equal(row.status, 'SUCCESS', `${id}: ${row.errorStatus} ${row.errorMessage}`);
    }
    const started = async (id: string) => (await commands.findById(id))!.startedAt!.getTime();
    const lastHigh = Math.max(...(await Promise.all(highWaiting.map(started))));
    const firstLow = Math.min(...(await Promise.all(lowWaiting.map(started))));
    assert.ok(lastHigh <= firstLow, `the high plan's commands started at ${lastHigh}, the older low ones at ${firstLow}`);
  });
});
