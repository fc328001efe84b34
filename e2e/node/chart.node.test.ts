// The Helm chart installed on a real node (kubelet, containerd, runc), driven through the API as a
// user would: commands run as containers of the runner image, with the CPU limit their vcpu_count
// asks for, the memory limit the chart sets, scheduled by their CPU requests; deleting an
// FfmpegCommand stops its container; `helm upgrade` loses nothing; `helm uninstall` keeps the CRD
// and the data. Run inside e2e/node/sandbox.sh (scripts/test.sh does).
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { LABELS } from '../../core/k8s/names.ts';
import { makeClip, startMediaServer, type MediaServer } from '../harness.ts';
import { API_DEPLOYMENT, CHART, installOnRealNode, RELEASE, RUNNER_MEMORY_LIMIT, type InstalledService } from './installed-service.ts';

/** A command that runs for about `seconds` (read at its real rate) on one vCPU. */
const slowCommand = (seconds: number, vcpus = 1) => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=d=${seconds}:s=160x120:r=10 -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: 'slow.mp4' },
  vcpu_count: vcpus,
  max_command_run_seconds: 300,
});

describe('the chart on a real node', () => {
  let svc: InstalledService;
  let media: MediaServer;
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

  before(async () => {
    const nodeIp = process.env.FFOP_NODE_IP ?? '127.0.0.1';
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'), nodeIp);
    svc = await installOnRealNode({ allow: [media.allowEntry] });
    core = svc.cluster.kubeconfig.makeApiClient(CoreV1Api);
    console.log(`# stage times (s): ${JSON.stringify(svc.timings)}`);
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  test('a command downloads its input, runs as a container of the runner image and ends SUCCESS with its output stored', async () => {
    const api = svc.client();
    const submitted = Date.now();
    const id = await api.submit({
      ffmpeg_command: '-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'small.mp4' },
      vcpu_count: 1, // the default (8) is more than this node has: its pod would wait for a bigger node
    });
    // Seen by polling the pod every 100 ms: when its container ran, and when it had ended.
    let pod: V1Pod | undefined;
    let runningAt = 0;
    let exitedAt = 0;
    const look = async () => {
      const seen = (await runnerPods(id).catch(() => []))[0];
      if (!seen) return;
      pod = seen;
      const state = seen.status?.containerStatuses?.[0]?.state;
      if (!runningAt && (state?.running || state?.terminated)) runningAt = Date.now();
      if (!exitedAt && state?.terminated) exitedAt = Date.now();
    };
    let looking = false; // one look at a time: a slow answer must not pile up requests
    const watching = setInterval(() => {
      if (looking) return;
      looking = true;
      void look().finally(() => (looking = false));
    }, 100);
    const { record } = await api.waitForEnd(id, 180_000);
    const ended = Date.now();
    clearInterval(watching);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    assert.equal(record.output_files.out_1.width, 160);
    assert.equal((await fetch(record.output_files.out_1.storage_url)).status, 200);
    assert.ok(media.requests.includes('/clip.mp4'), 'the runner pod fetched the input from the network');

    assert.ok(pod, 'the runner pod was seen');
    const runner = svc.values.runner as { image: { repository: string; tag: string } };
    assert.equal(pod.spec!.containers[0].image, `${runner.image.repository}:${runner.image.tag}`);
    assert.equal(pod.spec!.nodeName, 'localhost');
    if (runningAt) console.log(`# submit -> runner container seen running: ${runningAt - submitted} ms`);
    if (exitedAt)
      console.log(
        `# runner container seen exited -> SUCCESS seen by polling: ${Math.max(0, ended - exitedAt)} ms (SUCCESS may come first)`,
      );
    console.log(`# submit -> SUCCESS: ${ended - submitted} ms`);
  });

  test("vcpu_count becomes the container's CPU limit, enforced by its cgroup", async () => {
    const api = svc.client();
    const id = await api.submit(slowCommand(8, 2));
    const pod = await runningPod(id);
    const containerId = pod.status!.containerStatuses![0].containerID!.replace(/^containerd:\/\//, '');
    const podDir = await findDir(join('/sys/fs/cgroup/cpu', svc.nodeEnv.FFOP_NODE_CGROUP_ROOT), `pod${pod.metadata!.uid}`);
    assert.ok(podDir, 'the pod has a cpu cgroup under the node cgroup root');
    const quota = Number(await readFile(join(podDir, containerId, 'cpu.cfs_quota_us'), 'utf8'));
    const period = Number(await readFile(join(podDir, containerId, 'cpu.cfs_period_us'), 'utf8'));
    assert.equal(quota / period, 2, `cfs quota ${quota} / period ${period}`);
    assert.equal((await api.waitForEnd(id, 120_000)).record.status, 'SUCCESS');
  });

  test('a step over the runner memory limit ends FAILED with an error that names the limit', async () => {
    const api = svc.client();
    // `reverse` keeps every frame in memory: 1080p RGB frames pass 600Mi within a few seconds.
    const id = await api.submit({
      ffmpeg_command: '-f lavfi -i testsrc2=s=1920x1080:r=25:d=30 -vf reverse -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'reversed.mp4' },
      vcpu_count: 1,
      max_command_run_seconds: 300,
    });
    const { record } = await api.waitForEnd(id, 180_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'FFMPEG_FAILED', record.error_message);
    assert.match(record.error_message, new RegExp(`memory limit of ${RUNNER_MEMORY_LIMIT}`));
  });

  test('on a node of 2 CPUs, three 1-vCPU commands run two at a time and the third waits for the scheduler', async () => {
    const keys = await Promise.all([0, 1, 2].map(() => svc.newAccount('pro')));
    const ids = await Promise.all(keys.map((k) => svc.client(k).submit(slowCommand(6))));
    let mostRunning = 0;
    let sawUnschedulable = false;
    const records = await until(
      'the three commands to end',
      async () => {
        const pods = (await runnerPods()).filter((p) => ids.includes(p.metadata!.labels![LABELS.commandId]));
        mostRunning = Math.max(mostRunning, pods.filter((p) => p.status?.phase === 'Running').length);
        sawUnschedulable ||= pods.some((p) =>
          p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable' && /cpu/i.test(c.message ?? '')),
        );
        const polled = await Promise.all(ids.map((id, i) => svc.client(keys[i]).get(`/v1/commands/${id}`)));
        return polled.every((r) => r.body.status === 'SUCCESS' || r.body.status === 'FAILED') && polled.map((r) => r.body);
      },
      180_000,
    );
    assert.deepEqual(
      records.map((r) => r.status),
      ['SUCCESS', 'SUCCESS', 'SUCCESS'],
      JSON.stringify(records),
    );
    assert.equal(mostRunning, 2, 'never more than two runner pods at once');
    assert.ok(sawUnschedulable, 'the third pod waited as Unschedulable for lack of CPU');
  });

  test('deleting the FfmpegCommand stops its container', async () => {
    const api = svc.client();
    const id = await api.submit(slowCommand(120));
    const pod = await runningPod(id);
    const containerId = pod.status!.containerStatuses![0].containerID!.replace(/^containerd:\/\//, '');
    assert.ok((await svc.runningContainers()).includes(containerId), 'containerd runs the runner container');
    const deleted = await svc.kubectl(['delete', 'ffc', '-l', `${LABELS.commandId}=${id}`, '--wait=false']);
    assert.equal(deleted.code, 0, deleted.stderr);
    await until('the container to stop', async () => !(await svc.runningContainers()).includes(containerId), 90_000);
    const { record } = await api.waitForEnd(id, 60_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'CANCELLED');
  });

  test('helm upgrade while commands run loses nothing', async () => {
    const api = svc.client();
    const keys = () => svc.kubectl(['get', 'secret', `${RELEASE}-keys`, '-o', 'jsonpath={.data}']);
    const keysBefore = (await keys()).stdout;
    assert.match(keysBefore, /job-token-secret/);
    const apiPodsBefore = (await svc.kubectl(['get', 'pods', '-l', 'app.kubernetes.io/component=api', '-o', 'name'])).stdout.trim();
    const ids = [await api.submit(slowCommand(15)), await api.submit(slowCommand(15))];
    await Promise.all(ids.map((id) => runningPod(id)));
    const upgraded = await svc.helm([
      'upgrade',
      RELEASE,
      CHART,
      '--reuse-values',
      '--set',
      `podAnnotations.ffop-test/rollout=r${Date.now()}`,
      '--wait',
      '--timeout=4m',
    ]);
    assert.equal(upgraded.code, 0, upgraded.stderr);
    await svc.rolledOut();
    const apiPodsAfter = (await svc.kubectl(['get', 'pods', '-l', 'app.kubernetes.io/component=api', '-o', 'name'])).stdout.trim();
    assert.notEqual(apiPodsAfter, apiPodsBefore, 'the API pods were replaced');
    assert.equal((await keys()).stdout, keysBefore, 'generated keys kept');
    for (const id of ids) {
      const { record } = await api.waitForEnd(id, 180_000);
      assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
      assert.equal((await fetch(record.output_files.out_1.storage_url)).status, 200);
    }
  });

  test('helm uninstall leaves the CRD and the data; installing again serves the same commands', async () => {
    const api = svc.client();
    const id = await api.submit(slowCommand(1));
    const before = (await api.waitForEnd(id, 120_000)).record;
    assert.equal(before.status, 'SUCCESS');
    const valuesOut = await svc.helm(['get', 'values', RELEASE, '-o', 'json']);
    const uninstalled = await svc.helm(['uninstall', RELEASE, '--wait']);
    assert.equal(uninstalled.code, 0, uninstalled.stderr);
    assert.equal((await svc.kubectl(['get', 'crd', 'ffmpegcommands.ffmpeg-operator.dev'])).code, 0, 'the CRD stays');
    assert.match(
      (await svc.kubectl(['get', 'ffc', '-l', `${LABELS.commandId}=${id}`, '-o', 'name'])).stdout,
      /ffmpegcommand/,
      'the FfmpegCommand stays',
    );
    assert.equal((await svc.kubectl(['get', `deploy/${API_DEPLOYMENT}`])).code, 1, 'the API is gone');

    const file = join(svc.cluster.stateDir, 'values-again.json');
    await writeFile(file, valuesOut.stdout);
    const again = await svc.helm(['install', RELEASE, CHART, '-f', file, '--wait', '--timeout=4m']);
    assert.equal(again.code, 0, again.stderr);
    await svc.rolledOut();
    const after = await api.get(`/v1/commands/${id}`);
    assert.equal(after.status, 200);
    assert.equal(after.body.status, 'SUCCESS');
    assert.equal((await fetch(after.body.output_files.out_1.storage_url)).status, 200);
  });
});

/** The first directory named `name` under `root`, searched breadth-first. */
async function findDir(root: string, name: string): Promise<string | null> {
  const queue = [root];
  while (queue.length) {
    const dir = queue.shift()!;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      if (e.name === name) return join(dir, e.name);
      queue.push(join(dir, e.name));
    }
  }
  return null;
}
