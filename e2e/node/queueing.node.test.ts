// Cluster queueing on two real nodes (2 CPUs each), built-in mode: a burst far bigger than the nodes
// waits QUEUED with no Job and no deadline running, is released as pods end, and never runs more than
// fits; a higher plan's commands start first; a command larger than every node fails at once; a node
// drained mid-step runs the step again on the other node. Run inside e2e/node/sandbox.sh.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BatchV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { LABELS } from '../../core/k8s/names.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { installOnRealNode, OPERATOR_DEPLOYMENT, type InstalledService } from './installed-service.ts';

/** Seconds every step may take for downloads and for uploads: a step's deadline is these plus its run seconds. */
const ALLOWANCE_SECONDS = 10;
const RUN_SECONDS = 12;
/** What each step may take in all; waiting in the queue must not count. */
const DEADLINE_SECONDS = ALLOWANCE_SECONDS + RUN_SECONDS + ALLOWANCE_SECONDS;
const CPUS_PER_NODE = 2;

/** A 1-vCPU command that runs for about `seconds` (read at its real rate). */
const slowCommand = (seconds: number, vcpus = 1) => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=d=${seconds}:s=160x120:r=10 -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: 'slow.mp4' },
  vcpu_count: vcpus,
  max_command_run_seconds: RUN_SECONDS,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('cluster queueing on two real nodes', () => {
  let svc: InstalledService;
  let core: CoreV1Api;
  let batch: BatchV1Api;
  let commands: CommandsRepo;
  const runnerPods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: svc.namespace, labelSelector: `${LABELS.managedBy}=ffmpeg-operator,${LABELS.commandId}` }))
      .items;
  /** Names of the Jobs (not being deleted) of these commands. */
  const jobsOf = async (ids: string[]): Promise<string[]> =>
    (await batch.listNamespacedJob({ namespace: svc.namespace, labelSelector: `${LABELS.managedBy}=ffmpeg-operator` })).items
      .filter((j) => !j.metadata?.deletionTimestamp && ids.includes(j.metadata?.labels?.[LABELS.commandId] ?? ''))
      .map((j) => j.metadata!.name!);
  const until = async <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 180_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await fn();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(200);
    }
  };

  before(async () => {
    svc = await installOnRealNode({
      nodes: 2,
      values: {
        limits: { downloadTimeoutSeconds: ALLOWANCE_SECONDS, uploadAllowanceSeconds: ALLOWANCE_SECONDS },
        // A gate found the cluster full stays shut until our pods end or a node changes: what the tests
        // watch happens then, not at a retry whose timing no test controls.
        queueing: { retrySeconds: 600 },
      },
    });
    core = svc.cluster.kubeconfig.makeApiClient(CoreV1Api);
    batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
    commands = new CommandsRepo(svc.database.db);
    console.log(`# stage times (s): ${JSON.stringify(svc.timings)}`);
  });
  after(async () => {
    // What the operator said about its watches and the queue, for a failure's diagnosis.
    const logs = await svc?.kubectl(['logs', `deploy/${OPERATOR_DEPLOYMENT}`, '--tail=2000']).catch(() => null);
    for (const line of (logs?.stdout ?? '')
      .split('\n')
      .filter((l) => /watch|node|requeue|sent back|UNSCHEDULABLE|reconcile (step|pass) failed/i.test(l))
      .slice(-40))
      console.log(`# operator: ${line.slice(0, 400)}`);
    await svc?.close();
  });

  test('a burst of 4x the CPUs: every command SUCCEEDS, none waits on its deadline, no more run than fit, QUEUED commands have no Job', async () => {
    const count = 4 * CPUS_PER_NODE * svc.nodes.length;
    const api = svc.client();
    const submitted = Date.now();
    const ids = await Promise.all(Array.from({ length: count }, () => api.submit(slowCommand(8))));
    // Sampled while the burst drains: running containers per node, and what each command's row says
    // next to the Jobs that exist.
    let mostRunning = 0;
    const mostOnNode = new Map<string, number>();
    let mostQueued = 0;
    const queuedWithJob = new Set<string>();
    const nodesUsed = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await sample().catch((err: unknown) => console.log(`# a sample failed: ${(err as Error).message}`));
        await sleep(250);
      }
    })();
    async function sample() {
      const jobs = new Set(
        (await batch.listNamespacedJob({ namespace: svc.namespace, labelSelector: `${LABELS.managedBy}=ffmpeg-operator` })).items
          .filter((j) => !j.metadata?.deletionTimestamp)
          .map((j) => j.metadata?.labels?.[LABELS.commandId]),
      );
      const rows = await Promise.all(ids.map((id) => commands.findById(id)));
      const queued = rows.filter((r) => r?.status === 'QUEUED');
      mostQueued = Math.max(mostQueued, queued.length);
      // A command sent back to the queue has its Job deleted a moment later: only those never released count.
      for (const r of queued) if (jobs.has(r!.id) && r!.queueReason === null && r!.attempt === 0) queuedWithJob.add(r!.id);
      const running = (await runnerPods()).filter((p) => p.status?.containerStatuses?.[0]?.state?.running);
      mostRunning = Math.max(mostRunning, running.length);
      for (const node of svc.nodes) {
        const here = running.filter((p) => p.spec?.nodeName === node).length;
        if (here > 0) nodesUsed.add(node);
        mostOnNode.set(node, Math.max(mostOnNode.get(node) ?? 0, here));
      }
    }
    const ends = await Promise.all(ids.map((id) => api.waitForEnd(id, 600_000)));
    const drained = (Date.now() - submitted) / 1000;
    sampling = false;
    await sampler;
    console.log(
      `# burst of ${count}: drained in ${drained.toFixed(1)} s; most running ${mostRunning}, per node ${JSON.stringify(Object.fromEntries(mostOnNode))}; most QUEUED ${mostQueued}`,
    );
    for (const { record } of ends) {
      assert.equal(record.status, 'SUCCESS', `${record.command_id}: ${record.error_status} ${record.error_message}`);
    }
    assert.ok(
      drained > DEADLINE_SECONDS,
      `the burst took ${drained} s: longer than a deadline (${DEADLINE_SECONDS} s) would allow if waiting counted`,
    );
    assert.ok(mostRunning <= CPUS_PER_NODE * svc.nodes.length, `${mostRunning} ran at once`);
    for (const [node, most] of mostOnNode) assert.ok(most <= CPUS_PER_NODE, `${most} ran at once on ${node}`);
    assert.deepEqual([...nodesUsed].sort(), [...svc.nodes].sort(), 'both nodes ran commands');
    assert.ok(mostQueued >= count - 10 - CPUS_PER_NODE * svc.nodes.length, `commands waited QUEUED (most at once: ${mostQueued})`);
    assert.deepEqual([...queuedWithJob], [], 'no command had a Job while it waited QUEUED');
  });

  test("a plan of higher priority goes first: its commands start before a lower plan's older ones", async () => {
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
    const cpus = CPUS_PER_NODE * svc.nodes.length;
    // The cluster full of low work that outlasts all that follows, even on a loaded machine.
    const filling = await Promise.all(Array.from({ length: cpus }, () => low.submit({ ...slowCommand(60), max_command_run_seconds: 120 })));
    await until(
      'the cluster to be full',
      async () => (await runnerPods()).filter((p) => p.status?.containerStatuses?.[0]?.state?.running).length >= cpus,
    );
    // A node that changes opens the gate (it may still be shut since the burst before): the blockers are
    // released, find no node, and are sent back to the queue, which shuts the gate. It stays shut until
    // one of our pods ends (the filling ones run 60 s), a node changes, or queueing.retrySeconds passes
    // (set long here), so every command submitted after that waits in the queue.
    await svc.cordon(svc.nodes[1]);
    await svc.uncordon(svc.nodes[1]);
    const blockers = await Promise.all([low.submit(slowCommand(3)), low.submit(slowCommand(3))]);
    await until('the blockers to be sent back to the queue', async () => {
      const rows = await Promise.all(blockers.map((id) => commands.findById(id)));
      return rows.every((r) => r?.status === 'QUEUED' && r.queueReason !== null) && (await jobsOf(blockers)).length === 0;
    });
    const lowWaiting = [await low.submit(slowCommand(3)), await low.submit(slowCommand(3))];
    const highWaiting = await Promise.all([high.submit(slowCommand(3)), high.submit(slowCommand(3))]);
    for (const id of [...lowWaiting, ...highWaiting])
      assert.equal((await commands.findById(id))!.status, 'QUEUED', 'the shut gate holds new work');
    assert.deepEqual(await jobsOf([...lowWaiting, ...highWaiting]), [], 'no Job for work the shut gate holds');
    filling.push(...blockers);
    const started = async (id: string) => (await commands.findById(id))?.startedAt?.getTime() ?? Infinity;
    await Promise.all([
      ...[...filling, ...lowWaiting].map((id) => low.waitForEnd(id, 300_000)),
      ...highWaiting.map((id) => high.waitForEnd(id, 300_000)),
    ]);
    for (const id of [...filling, ...lowWaiting, ...highWaiting]) {
      const row = (await commands.findById(id))!;
      assert.equal(row.status, 'SUCCESS', `${id}: ${row.errorStatus} ${row.errorMessage}`);
    }
    const lastHigh = Math.max(...(await Promise.all(highWaiting.map(started))));
    // (Not the blockers: their started_at is their first release, before they were sent back.)
    const firstLow = Math.min(...(await Promise.all(lowWaiting.map(started))));
    assert.ok(lastHigh <= firstLow, `the high plan's commands started at ${lastHigh}, the older low ones at ${firstLow}`);
  });

  test('a command larger than every node fails UNSCHEDULABLE at once, naming the largest node', async () => {
    const api = svc.client();
    const id = await api.submit({ ...slowCommand(2, 8) });
    const { record } = await api.waitForEnd(id, 60_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'UNSCHEDULABLE');
    assert.match(record.error_message, /the step asks 8 vCPUs.*the largest, (localhost|node-2), has 2 vCPUs/);
    assert.ok(record.total_processing_seconds < 10, `failed after ${record.total_processing_seconds} s, not at its deadline`);
  });

  test('a node drained mid-step: the step runs again as its next attempt (waiting in the queue while the other node is full) and the command SUCCEEDS', async () => {
    const api = svc.client();
    const other = svc.nodes[1];
    // Two steps at once: the scheduler spreads them, one lands on the node to drain.
    // Long enough (30 s) that the drain, slow on a loaded machine, lands while ffmpeg runs.
    const ids = await Promise.all(
      Array.from({ length: 2 * CPUS_PER_NODE }, () => api.submit({ ...slowCommand(30), max_command_run_seconds: 60 })),
    );
    const victim = await until(`a running runner pod on ${other}`, async () =>
      // One of this test's commands (an earlier test's pods may still be going away).
      (await runnerPods()).find(
        (p) =>
          p.spec?.nodeName === other &&
          !p.metadata?.deletionTimestamp &&
          ids.includes(p.metadata?.labels?.[LABELS.commandId] ?? '') &&
          p.status?.containerStatuses?.[0]?.state?.running,
      ),
    );
    const victimId = victim.metadata!.labels![LABELS.commandId];
    assert.ok(ids.includes(victimId));
    const before = (await commands.findById(victimId))!;
    assert.ok(before.processingStage !== 'UPLOADING', `the step still runs ffmpeg when the drain starts (${before.processingStage})`);
    await svc.drainNode(other);
    try {
      const ends = await Promise.all(ids.map((id) => api.waitForEnd(id, 300_000)));
      for (const { record } of ends)
        assert.equal(record.status, 'SUCCESS', `${record.command_id}: ${record.error_status} ${record.error_message}`);
      const row = (await commands.findById(victimId))!;
      // Run again once; with the other node full, its new pod may have waited in the queue (a later attempt).
      assert.equal(row.stepRetries, 1, 'the drained step ran again');
      assert.ok(row.attempt >= 2, `attempt ${row.attempt}`);
      const { seen } = ends[ids.indexOf(victimId)];
      assert.ok(!seen.includes('FAILED'), `the poll went ${seen.join(' -> ')}`);
    } finally {
      await svc.uncordon(other);
    }
  });
});
