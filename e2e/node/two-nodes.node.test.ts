// The chart on two real nodes in one sandbox (e2e/node/start.sh --index 1 and 2): both register and
// become Ready, the API server reaches both kubelets, commands submitted at once are spread over the
// nodes by the scheduler, and the fixture's drainNode, uncordon and stopNode take a node away.
// Run inside e2e/node/sandbox.sh (scripts/test.sh does).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { LABELS } from '../../core/k8s/names.ts';
import { installOnRealNode, type InstalledService } from './installed-service.ts';

/** A command that runs for about `seconds` (read at its real rate) on one vCPU. */
const slowCommand = (seconds: number) => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=d=${seconds}:s=160x120:r=10 -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: 'slow.mp4' },
  vcpu_count: 1,
  max_command_run_seconds: 300,
});

const ready = (node: V1Node) => node.status?.conditions?.find((c) => c.type === 'Ready')?.status;

/** Pids in the cgroups under a node's cgroup root (its pods' containers), from the pids hierarchy. */
async function processesUnder(cgroupRoot: string): Promise<number[]> {
  const v1 = join('/sys/fs/cgroup/pids', cgroupRoot);
  const queue = [existsSync(v1) ? v1 : join('/sys/fs/cgroup', cgroupRoot)];
  const pids: number[] = [];
  while (queue.length) {
    const dir = queue.shift()!;
    const procs = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
    pids.push(...procs.split('\n').filter(Boolean).map(Number));
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) if (e.isDirectory()) queue.push(join(dir, e.name));
  }
  return pids;
}

describe('the chart on two real nodes', () => {
  let svc: InstalledService;
  let core: CoreV1Api;
  const runnerPods = async (commandId?: string): Promise<V1Pod[]> =>
    (
      await core.listNamespacedPod({
        namespace: svc.namespace,
        labelSelector: commandId ? `${LABELS.commandId}=${commandId}` : `${LABELS.managedBy}=ffmpeg-operator,${LABELS.commandId}`,
      })
    ).items;
  const until = async <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await fn();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const runningPod = (commandId: string) =>
    until(`a running runner container for ${commandId}`, async () =>
      (await runnerPods(commandId)).find((p) => p.status?.containerStatuses?.[0]?.state?.running),
    );
  const kubectlOk = async (args: string[]) => {
    const result = await svc.kubectl(args);
    assert.equal(result.code, 0, `kubectl ${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };

  before(async () => {
    svc = await installOnRealNode({ nodes: 2 });
    core = svc.cluster.kubeconfig.makeApiClient(CoreV1Api);
    console.log(`# stage times (s): ${JSON.stringify(svc.timings)}`);
  });
  after(async () => {
    await svc?.close();
  });

  test("both nodes are Ready with the machine's CPUs; the chart's pods run on the first", async () => {
    assert.deepEqual(svc.nodes, ['localhost', 'node-2']);
    const nodes = (await core.listNode()).items;
    assert.deepEqual(nodes.map((n) => n.metadata!.name).sort(), ['localhost', 'node-2']);
    for (const node of nodes) {
      assert.equal(ready(node), 'True', `${node.metadata!.name} is Ready`);
      assert.ok(Number(node.status!.allocatable!.cpu) >= 1, `${node.metadata!.name} offers CPUs`);
    }
    const internalIp = (name: string) =>
      nodes.find((n) => n.metadata!.name === name)!.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
    assert.equal(internalIp('localhost'), svc.nodeIp);
    assert.equal(internalIp('node-2'), svc.nodeEnvs['node-2'].FFOP_NODE_IP);
    const chartPods = (await core.listNamespacedPod({ namespace: svc.namespace })).items.filter(
      (p) => !p.metadata!.labels?.[LABELS.commandId],
    );
    assert.ok(chartPods.length >= 3, 'the API and operator pods');
    assert.deepEqual([...new Set(chartPods.map((p) => p.spec!.nodeName))], ['localhost']);
  });

  test('1-vCPU commands submitted at once run on both nodes and all SUCCEED; kubectl logs and exec reach both kubelets', async () => {
    const keys = await Promise.all([0, 1, 2, 3].map(() => svc.newAccount('pro')));
    const ids = await Promise.all(keys.map((k) => svc.client(k).submit(slowCommand(8))));
    const nodeOf = new Map<string, string>();
    const reached = new Set<string>();
    const records = await until(
      'the four commands to end',
      async () => {
        for (const pod of await runnerPods()) {
          const id = pod.metadata!.labels![LABELS.commandId];
          const node = pod.spec?.nodeName;
          if (!ids.includes(id) || !node) continue;
          nodeOf.set(id, node);
          // A running container on a node not reached yet: its kubelet serves exec and logs.
          if (!reached.has(node) && pod.status?.containerStatuses?.[0]?.state?.running) {
            const exec = await svc.kubectl(['exec', pod.metadata!.name!, '--', 'ffmpeg', '-hide_banner', '-version']);
            const logs = await svc.kubectl(['logs', pod.metadata!.name!]);
            if (exec.code === 0 && logs.code === 0) {
              assert.match(exec.stdout, /ffmpeg version/);
              reached.add(node);
            }
          }
        }
        const polled = await Promise.all(ids.map((id, i) => svc.client(keys[i]).get(`/v1/commands/${id}`)));
        return polled.every((r) => r.body.status === 'SUCCESS' || r.body.status === 'FAILED') && polled.map((r) => r.body);
      },
      180_000,
    );
    assert.deepEqual(
      records.map((r) => r.status),
      ['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS'],
      JSON.stringify(records),
    );
    assert.deepEqual([...new Set(nodeOf.values())].sort(), ['localhost', 'node-2'], JSON.stringify([...nodeOf]));
    console.log(`# runner pods by node: ${JSON.stringify([...nodeOf.values()].sort())}`);
    assert.deepEqual([...reached].sort(), ['localhost', 'node-2'], 'kubectl exec and logs worked on both nodes');
    for (const record of records) assert.equal((await fetch(record.output_files.out_1.storage_url)).status, 200);
  });

  test('drainNode evicts the runner pod of node-2 and keeps new ones off it until uncordon', async () => {
    // Only node-2 takes new pods while the first node is cordoned.
    await kubectlOk(['cordon', 'localhost']);
    try {
      const api = svc.client();
      const id = await api.submit(slowCommand(120));
      const pod = await runningPod(id);
      assert.equal(pod.spec!.nodeName, 'node-2');
      const drainStart = Date.now();
      await svc.drainNode('node-2');
      console.log(`# drainNode(node-2) with a runner container running there: ${Date.now() - drainStart} ms`);
      const node = await core.readNode({ name: 'node-2' });
      assert.equal(node.spec!.unschedulable, true, 'node-2 is cordoned');
      assert.ok(!(await runnerPods(id)).some((p) => p.metadata!.uid === pod.metadata!.uid), 'the evicted pod is gone');
      await until('no container to run on node-2', async () => (await svc.runningContainers('node-2')).length === 0, 15_000);
      // What becomes of the command is the operator's business; it must not keep a CPU here.
      await kubectlOk(['delete', 'ffc', '-l', `${LABELS.commandId}=${id}`, '--wait=false']);
    } finally {
      await kubectlOk(['uncordon', 'localhost']);
      await svc.uncordon('node-2');
    }
    assert.notEqual((await core.readNode({ name: 'node-2' })).spec!.unschedulable, true, 'node-2 takes pods again');
  });

  test('stopNode kills the containers of node-2 at once; the control plane finds out from the missing heartbeats', async () => {
    await kubectlOk(['cordon', 'localhost']);
    let stoppedAt = 0;
    let pod: V1Pod;
    let id: string;
    try {
      id = await svc.client().submit(slowCommand(120));
      pod = await runningPod(id);
      assert.equal(pod.spec!.nodeName, 'node-2');
      const containerId = pod.status!.containerStatuses![0].containerID!.replace(/^containerd:\/\//, '');
      assert.ok((await svc.runningContainers('node-2')).includes(containerId));
      const cgroupRoot = svc.nodeEnvs['node-2'].FFOP_NODE_CGROUP_ROOT;
      assert.notDeepEqual(await processesUnder(cgroupRoot), [], "the runner's processes are in node-2's cgroups");
      await svc.stopNode('node-2');
      stoppedAt = Date.now();
      await until('the processes of node-2 to end', async () => (await processesUnder(cgroupRoot)).length === 0, 5_000);
      await assert.rejects(svc.runningContainers('node-2'), 'containerd is gone');
      const exec = await svc.kubectl(['exec', pod.metadata!.name!, '--', 'true']);
      assert.notEqual(exec.code, 0, 'the API server reaches no kubelet on node-2');
    } finally {
      await kubectlOk(['uncordon', 'localhost']);
    }
    // The node lifecycle controller marks it after its grace period without heartbeats; its pods stay
    // bound to it (they tolerate an unreachable node for 300 s) unless an admin marks it out of service.
    await until('node-2 to be marked not Ready', async () => ready(await core.readNode({ name: 'node-2' })) !== 'True', 150_000);
    const notReadyAt = Date.now();
    console.log(`# node-2 stopped -> Ready=${ready(await core.readNode({ name: 'node-2' }))}: ${notReadyAt - stoppedAt} ms`);
    await kubectlOk(['taint', 'node', 'node-2', 'node.kubernetes.io/out-of-service=nodeshutdown:NoExecute']);
    await until(
      'the pod of the dead node to be deleted',
      async () => !(await runnerPods(id)).some((p) => p.metadata!.uid === pod.metadata!.uid),
      120_000,
    );
    console.log(`# node-2 tainted out-of-service -> its runner pod deleted: ${Date.now() - notReadyAt} ms`);
    await kubectlOk(['delete', 'ffc', '-l', `${LABELS.commandId}=${id}`, '--wait=false']);
  });
});
