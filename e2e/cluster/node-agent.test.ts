// The kubelet stand-in against the real control plane: the real Job controller must see the pods it
// runs start and finish, deadlines and deletions must kill the local processes, and the Node must
// stay Ready with a fresh Lease.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BatchV1Api, CoordinationV1Api, CoreV1Api, type V1Job, type V1JobSpec, type V1Pod } from '@kubernetes/client-node';
import { RUNNER_CONTAINER } from '../../core/k8s/names.ts';
import { startCluster, type Cluster } from './cluster.ts';
import { startNodeAgent, type NodeAgent } from './node-agent.ts';
import { NODE_LEASE_NAMESPACE, statusCode } from './node-heartbeat.ts';

const NODE_NAME = 'ffop-test-node';
/** Watches end after 5-10 s, so the agent has to re-list and re-watch during this file. */
const MIN_REQUEST_TIMEOUT_SECONDS = 5;
const WAIT_MS = 90_000;
/** Set in the test process; the runner must not see it (only the pod's env over PATH). */
const LEAK_CANARY = 'FFOP_NODE_AGENT_TEST_CANARY';

describe('node agent (kubelet stand-in) on a real control plane', () => {
  let cluster: Cluster;
  let agent: NodeAgent;
  let core: CoreV1Api;
  let batch: BatchV1Api;
  let tmp: string;

  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'ffop-node-agent-'));
    process.env[LEAK_CANARY] = 'leaked';
    cluster = await startCluster({ minRequestTimeout: MIN_REQUEST_TIMEOUT_SECONDS });
    core = cluster.kubeconfig.makeApiClient(CoreV1Api);
    batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
    agent = await startNodeAgent({
      kubeconfig: cluster.kubeconfig,
      nodeName: NODE_NAME,
      namespace: cluster.namespace,
      heartbeatIntervalMs: 1000,
      // The container named "runner" runs its first arg as a node script; anything else is refused.
      runnerCommand: (pod) => {
        const container = pod.spec?.containers[0];
        if (container?.name !== RUNNER_CONTAINER) return null;
        return { program: process.execPath, args: ['-e', container.args?.[0] ?? ''], cwd: tmp };
      },
    });
  });

  after(async () => {
    delete process.env[LEAK_CANARY];
    await agent?.stop();
    await cluster?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  function runnerPodSpec(script: string) {
    return {
      restartPolicy: 'Never',
      containers: [
        {
          name: RUNNER_CONTAINER,
          image: 'ffmpeg-operator/runner:test',
          args: [script],
          env: [{ name: 'GREETING', value: 'hello' }],
        },
      ],
    };
  }

  async function createJob(name: string, script: string, spec: Partial<V1JobSpec> = {}): Promise<V1Job> {
    return batch.createNamespacedJob({
      namespace: cluster.namespace,
      body: { metadata: { name }, spec: { backoffLimit: 0, ...spec, template: { spec: runnerPodSpec(script) } } },
    });
  }

  async function jobPods(jobName: string): Promise<V1Pod[]> {
    const list = await core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: `batch.kubernetes.io/job-name=${jobName}` });
    return list.items;
  }

  async function waitForJobCondition(name: string, type: 'Complete' | 'Failed') {
    return waitFor(`Job ${name} ${type}`, async () => {
      const job = await batch.readNamespacedJob({ name, namespace: cluster.namespace });
      return job.status?.conditions?.find((c) => c.type === type && c.status === 'True');
    });
  }

  async function waitForRunningPod(jobName: string): Promise<V1Pod> {
    return waitFor(`a Running pod of ${jobName}`, async () => (await jobPods(jobName)).find((p) => p.status?.phase === 'Running'));
  }

  async function waitForPodGone(name: string): Promise<void> {
    await waitFor(`pod ${name} to be removed`, async () => {
      try {
        await core.readNamespacedPod({ name, namespace: cluster.namespace });
        return undefined;
      } catch (err) {
        if (statusCode(err) === 404) return true;
        throw err;
      }
    });
  }

  test('a Job whose process exits 0 completes, with exit code 0 on its pod', async (t) => {
    const exitMarker = join(tmp, 'complete-exit-time');
    // Stays up a moment so the test sees Running; checks it got the pod's env and not ours.
    const script = `
      if (process.env.GREETING !== 'hello') process.exit(7);
      if (process.env.${LEAK_CANARY} !== undefined) process.exit(8);
      if (!process.env.PATH) process.exit(9);
      setTimeout(() => { require('fs').writeFileSync(${JSON.stringify(exitMarker)}, String(Date.now())); }, 1000);`;
    const created = Date.now();
    await createJob('complete', script);
    const running = await waitForRunningPod('complete');
    const runningAt = Date.now();
    assert.equal(running.spec?.nodeName, NODE_NAME);
    assert.ok(running.status?.containerStatuses?.[0]?.state?.running?.startedAt);

    await waitForJobCondition('complete', 'Complete');
    const completeAt = Date.now();
    const exitedAt = Number(await readFile(exitMarker, 'utf8'));

    const [pod] = await jobPods('complete');
    assert.equal(pod.status?.phase, 'Succeeded');
    const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(terminated?.exitCode, 0);
    assert.equal(terminated?.reason, 'Completed');
    t.diagnostic(`Job created -> pod Running (seen by polling): ${runningAt - created} ms`);
    t.diagnostic(`process exit -> Job Complete (seen by polling): ${completeAt - exitedAt} ms`);
  });

  test('a Job whose process exits 3 fails, with the exit code and the stderr tail on its pod', async () => {
    const script = `process.stderr.write('x'.repeat(10000) + '\\nstep failed: bad input\\n'); process.exitCode = 3;`;
    await createJob('fails', script);
    const failed = await waitForJobCondition('fails', 'Failed');
    assert.equal(failed.reason, 'BackoffLimitExceeded');

    const [pod] = await jobPods('fails');
    assert.equal(pod.status?.phase, 'Failed');
    const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(terminated?.exitCode, 3);
    assert.equal(terminated?.reason, 'Error');
    assert.ok(terminated?.message?.endsWith('xxx\nstep failed: bad input\n'), terminated?.message?.slice(-100));
    assert.ok(Buffer.byteLength(terminated?.message ?? '') <= 4096);
  });

  test('activeDeadlineSeconds: the Job fails with DeadlineExceeded and the process is killed', async () => {
    await createJob('deadline', 'setTimeout(() => {}, 60000);', { activeDeadlineSeconds: 2 });
    const running = await waitForRunningPod('deadline');
    const pid = agent.pidOf(running.metadata!.name!, cluster.namespace);
    assert.ok(pid);
    assert.equal(isAlive(pid), true);

    const failed = await waitForJobCondition('deadline', 'Failed');
    assert.equal(failed.reason, 'DeadlineExceeded');
    assert.equal(isAlive(pid), false);
    await waitForPodGone(running.metadata!.name!);
  });

  test('deleting a running pod kills its process and removes the pod', async () => {
    const name = 'deleted-pod';
    await core.createNamespacedPod({
      namespace: cluster.namespace,
      body: { metadata: { name }, spec: runnerPodSpec('setTimeout(() => {}, 60000);') },
    });
    const pid = await waitFor('the pod process', async () => agent.pidOf(name, cluster.namespace));
    await waitFor(
      'pod Running',
      async () => (await core.readNamespacedPod({ name, namespace: cluster.namespace })).status?.phase === 'Running' || undefined,
    );
    assert.equal(isAlive(pid), true);

    await core.deleteNamespacedPod({ name, namespace: cluster.namespace });
    await waitForPodGone(name);
    assert.equal(isAlive(pid), false);
  });

  test('a process that ignores SIGTERM is killed after the grace period', async () => {
    const name = 'stubborn-pod';
    const ready = join(tmp, 'stubborn-ready');
    const script =
      `process.on('SIGTERM', () => {}); require('fs').writeFileSync(${JSON.stringify(ready)}, 'x'); ` + 'setInterval(() => {}, 1000);';
    await core.createNamespacedPod({
      namespace: cluster.namespace,
      body: { metadata: { name }, spec: { ...runnerPodSpec(script), terminationGracePeriodSeconds: 1 } },
    });
    const pid = await waitFor('the pod process', async () => agent.pidOf(name, cluster.namespace));
    await waitFor('the SIGTERM handler', async () => existsSync(ready) || undefined);

    await core.deleteNamespacedPod({ name, namespace: cluster.namespace });
    await waitForPodGone(name);
    assert.equal(isAlive(pid), false);
  });

  test('a pod the agent has no runner for fails with a message', async () => {
    const name = 'unsupported-pod';
    await core.createNamespacedPod({
      namespace: cluster.namespace,
      body: { metadata: { name }, spec: { restartPolicy: 'Never', containers: [{ name: 'other', image: 'busybox' }] } },
    });
    const pod = await waitFor('pod Failed', async () => {
      const p = await core.readNamespacedPod({ name, namespace: cluster.namespace });
      return p.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(pod.status?.reason, 'UnsupportedPod');
    assert.match(pod.status?.message ?? '', /no runner/);
    assert.equal(agent.pidOf(name, cluster.namespace), undefined);
  });

  test('the Node is Ready with its resources and its Lease is renewed', async () => {
    const node = await core.readNode({ name: NODE_NAME });
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True');
    assert.equal(node.status?.allocatable?.cpu, '64');
    assert.equal(node.spec?.taints, undefined);

    const coordination = cluster.kubeconfig.makeApiClient(CoordinationV1Api);
    const renewTime = async () => {
      const lease = await coordination.readNamespacedLease({ name: NODE_NAME, namespace: NODE_LEASE_NAMESPACE });
      assert.equal(lease.spec?.holderIdentity, NODE_NAME);
      return new Date(lease.spec.renewTime!).getTime();
    };
    const first = await renewTime();
    await waitFor('the Lease to be renewed', async () => (await renewTime()) > first || undefined);
  });

  test('keeps running pods after the API server has ended its watches', async () => {
    // Longer than the longest watch the API server allows (2 x min-request-timeout).
    await new Promise((r) => setTimeout(r, 2 * MIN_REQUEST_TIMEOUT_SECONDS * 1000 + 1000));
    await createJob('after-rewatch', '');
    await waitForJobCondition('after-rewatch', 'Complete');
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** Polls every 50 ms until check returns a value other than undefined. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
