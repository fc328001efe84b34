// Kueue (built from its Go module, e2e/kueue) on the real control plane admits suspended batch/v1 Jobs
// by the quota of their ClusterQueue and the priority of their WorkloadPriorityClass: the Jobs within
// quota are resumed (spec.suspend false), the others stay suspended with a pending Workload, and quota
// freed by a deleted or a finished Job goes to the waiting Job of higher priority first. No node
// runs the pods: Kueue decides on quota alone, and a finished pod is written as a kubelet would.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  dumpYaml,
  loadAllYaml,
  setHeaderOptions,
  type KubernetesObject,
  type V1Deployment,
  type V1Job,
} from '@kubernetes/client-node';
import { startKueue, type Kueue } from '../kueue/kueue.ts';
import { parseEnvText, runProcess, startCluster, type Cluster } from './cluster.ts';
import { sleep } from './list-watch.ts';
import { terminatedStatus } from './pod-status.ts';

const KUEUE = { group: 'kueue.x-k8s.io', version: 'v1beta2' };
const QUEUE_LABEL = 'kueue.x-k8s.io/queue-name';
const PRIORITY_LABEL = 'kueue.x-k8s.io/priority-class';
const WAIT_MS = 60_000;
const ROOT = join(import.meta.dirname, '..', '..');

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface Workload {
  metadata: { name: string; ownerReferences?: { kind: string; name: string }[] };
  spec: { priority?: number; priorityClassRef?: { name: string }; queueName?: string };
  status?: { conditions?: Condition[]; admission?: { clusterQueue: string } };
}

let cluster: Cluster;
let kueue: Kueue;
let batch: BatchV1Api;
let core: CoreV1Api;
let custom: CustomObjectsApi;

before(async () => {
  cluster = await startCluster();
  kueue = await startKueue(cluster);
  batch = cluster.kubeconfig.makeApiClient(BatchV1Api);
  core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  custom = cluster.kubeconfig.makeApiClient(CustomObjectsApi);
});
after(async () => {
  await kueue?.stop();
  await cluster?.stop();
});

/** Polls check every 100 ms until it returns a value other than undefined or false. */
async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

const condition = (conditions: Condition[] | undefined, type: string) => conditions?.find((c) => c.type === type);

async function workloadOf(job: string): Promise<Workload | undefined> {
  const list = (await custom.listNamespacedCustomObject({ ...KUEUE, namespace: cluster.namespace, plural: 'workloads' })) as {
    items: Workload[];
  };
  return list.items.find((w) => w.metadata.ownerReferences?.some((o) => o.kind === 'Job' && o.name === job));
}

const readJob = (name: string) => batch.readNamespacedJob({ name, namespace: cluster.namespace });
const suspended = async (name: string) => (await readJob(name)).spec?.suspend === true;

/** Waits for the Job's Workload to be pending for lack of quota (Kueue tried and found none free). */
async function waitPendingForQuota(job: string): Promise<Workload> {
  return until(`the Workload of ${job} to be pending for quota`, async () => {
    const w = await workloadOf(job);
    const reserved = condition(w?.status?.conditions, 'QuotaReserved');
    return reserved?.status === 'False' && /insufficient (unused )?quota/i.test(reserved.message ?? '') && w;
  });
}

async function waitAdmitted(job: string): Promise<V1Job> {
  return until(`${job} to be admitted and resumed`, async () => {
    const j = await readJob(job);
    return j.spec?.suspend === false && j;
  });
}

function jobManifest(name: string, priorityClass: string): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, labels: { [QUEUE_LABEL]: 'ffmpeg', [PRIORITY_LABEL]: priorityClass } },
    spec: {
      // Created suspended, as the operator does in Kueue mode: Kueue resumes it on admission.
      suspend: true,
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'runner', image: 'ffmpeg-operator-runner:test', resources: { requests: { cpu: '1' } } }],
        },
      },
    },
  };
}

async function createJob(name: string, priorityClass: string): Promise<void> {
  await batch.createNamespacedJob({ namespace: cluster.namespace, body: jobManifest(name, priorityClass) });
}

/** Writes the Job's one pod as Succeeded, as a kubelet would after its container exited 0. */
async function finishPod(job: string): Promise<void> {
  const pod = await until(`a pod of ${job}`, async () => {
    const pods = await core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: `job-name=${job}` });
    return pods.items[0];
  });
  const started = new Date(Date.now() - 1000);
  const body = terminatedStatus(
    pod.metadata!.uid!,
    { name: 'runner', image: 'ffmpeg-operator-runner:test', containerId: `containerd://${job}` },
    { exitCode: 0, reason: 'Completed', startedAt: started, finishedAt: new Date() },
  );
  await core.patchNamespacedPodStatus(
    { name: pod.metadata!.name!, namespace: cluster.namespace, body },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
}

test('Kueue resumes suspended Jobs within the cpu quota, keeps the rest suspended, and releases the higher priority first', async () => {
  await cluster.applyYaml(`
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: ffmpeg
spec:
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: ${cluster.namespace}
  resourceGroups:
    - coveredResources: [cpu]
      flavors:
        - name: default-flavor
          resources:
            - name: cpu
              nominalQuota: "2"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: ffmpeg
spec:
  clusterQueue: ffmpeg
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: free
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: pro
value: 1000
`);
  await until('the ClusterQueue to be active', async () => {
    const cq = (await custom.getClusterCustomObject({ ...KUEUE, plural: 'clusterqueues', name: 'ffmpeg' })) as {
      status?: { conditions?: Condition[] };
    };
    return condition(cq.status?.conditions, 'Active')?.status === 'True';
  });

  // Two Jobs of 1 cpu fill the quota of 2: both are admitted and resumed.
  await createJob('free-1', 'free');
  await createJob('free-2', 'free');
  for (const name of ['free-1', 'free-2']) {
    await waitAdmitted(name);
    const workload = (await workloadOf(name))!;
    assert.equal(workload.status?.admission?.clusterQueue, 'ffmpeg');
    assert.equal(condition(workload.status?.conditions, 'Admitted')?.status, 'True', name);
  }

  // Beyond the quota: an older free Job and a newer pro Job wait, suspended.
  await createJob('free-3', 'free');
  await waitPendingForQuota('free-3');
  await createJob('pro-4', 'pro');
  const pending = await waitPendingForQuota('pro-4');
  assert.equal(pending.spec.priority, 1000);
  assert.equal(pending.spec.priorityClassRef?.name, 'pro');
  assert.equal((await workloadOf('free-3'))!.spec.priority, 100);
  assert.ok(await suspended('free-3'));
  assert.ok(await suspended('pro-4'));

  // A deleted Job frees its cpu: the pro Job goes first although the free one waited longer.
  await batch.deleteNamespacedJob({ name: 'free-1', namespace: cluster.namespace, propagationPolicy: 'Background' });
  await waitAdmitted('pro-4');
  assert.ok(await suspended('free-3'), 'free-3 still waits');
  assert.notEqual(condition((await workloadOf('free-3'))?.status?.conditions, 'QuotaReserved')?.status, 'True');

  // A finished Job frees its cpu too: its pod succeeds, the Job completes, and free-3 is admitted.
  await finishPod('free-2');
  await until('free-2 to complete', async () => {
    const job = await readJob('free-2');
    return condition(job.status?.conditions, 'Complete')?.status === 'True';
  });
  await until('the Workload of free-2 to be finished', async () => {
    const w = await workloadOf('free-2');
    return condition(w?.status?.conditions, 'Finished')?.status === 'True';
  });
  await waitAdmitted('free-3');
  assert.equal(condition((await workloadOf('free-3'))?.status?.conditions, 'Admitted')?.status, 'True');
});

test('a Job without the queue-name label is not Kueue’s: it is neither suspended nor given a Workload', async () => {
  await batch.createNamespacedJob({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'unqueued' },
      spec: {
        backoffLimit: 0,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '1' } } }] } },
      },
    },
  });
  // The Job controller makes its pod at once (no Kueue gate): that is the state to wait for.
  await until('a pod of the unqueued Job', async () => {
    const pods = await core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: 'job-name=unqueued' });
    return pods.items.length > 0;
  });
  assert.notEqual((await readJob('unqueued')).spec?.suspend, true);
  assert.equal(await workloadOf('unqueued'), undefined);
});

test("the chart's Kueue objects (queueing.mode: kueue) admit a runner-shaped Job by its plan's class", async () => {
  // The chart as a platform team would install it, with a quota of one runner at a time.
  const built = parseEnvText((await runProcess('bash', [join(ROOT, 'e2e', 'control-plane', 'build.sh')])).stdout);
  const rendered = await runProcess(join(built.FFOP_HELM_BIN_DIR, 'helm'), [
    'template',
    'ffop',
    join(ROOT, 'charts', 'ffmpeg-operator'),
    '-n',
    cluster.namespace,
    ...Object.entries({
      'database.url': 'postgres://unused',
      's3.endpoint': 'https://unused',
      's3.bucket': 'unused',
      's3.accessKey': 'unused',
      's3.secretKey': 'unused',
      'queueing.mode': 'kueue',
      'queueing.kueue.clusterQueue.cpu': '1',
    }).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
  ]);
  assert.equal(rendered.code, 0, rendered.stderr);
  const docs = loadAllYaml(rendered.stdout).filter(Boolean) as KubernetesObject[];
  const kueueDocs = docs.filter((d) => d.apiVersion?.startsWith('kueue.x-k8s.io/'));
  assert.deepEqual(kueueDocs.map((d) => d.kind).sort(), [
    'ClusterQueue',
    'LocalQueue',
    'ResourceFlavor',
    'WorkloadPriorityClass',
    'WorkloadPriorityClass',
  ]);
  await cluster.applyYaml(kueueDocs.map((d) => dumpYaml(d)).join('---\n'));
  const operator = docs.find((d) => d.kind === 'Deployment' && d.metadata?.name?.endsWith('-operator')) as V1Deployment;
  const env = Object.fromEntries(operator.spec!.template.spec!.containers[0].env!.map((e) => [e.name, e.value]));
  const classes = Object.fromEntries(env.FFOP_KUEUE_PRIORITY_CLASSES!.split(',').map((pair) => pair.split('=')));
  const clusterQueue = docs.find((d) => d.kind === 'ClusterQueue')!.metadata!.name!;
  await until('the chart’s ClusterQueue to be active', async () => {
    const cq = (await custom.getClusterCustomObject({ ...KUEUE, plural: 'clusterqueues', name: clusterQueue })) as {
      status?: { conditions?: Condition[] };
    };
    return condition(cq.status?.conditions, 'Active')?.status === 'True';
  });

  // As the operator makes a runner Job: a cpu request, and memory and disk limits (which Kueue counts as requests).
  const runnerJob = (name: string, plan: string): V1Job => {
    const job = jobManifest(name, classes[plan]);
    job.metadata!.labels![QUEUE_LABEL] = env.FFOP_KUEUE_QUEUE_NAME!;
    job.spec!.template.spec!.containers[0].resources = {
      requests: { cpu: '1' },
      limits: { cpu: '1', memory: '4608Mi', 'ephemeral-storage': '100Gi' },
    };
    return job;
  };
  await batch.createNamespacedJob({ namespace: cluster.namespace, body: runnerJob('runner-pro', 'pro') });
  await waitAdmitted('runner-pro');
  const admitted = (await workloadOf('runner-pro'))! as Workload & {
    status: { admission: { clusterQueue: string; podSetAssignments: { flavors: Record<string, string> }[] } };
  };
  assert.equal(admitted.status.admission.clusterQueue, clusterQueue);
  assert.deepEqual(Object.keys(admitted.status.admission.podSetAssignments[0].flavors).sort(), ['cpu', 'ephemeral-storage', 'memory']);
  assert.equal(admitted.spec.priority, 1000);

  await batch.createNamespacedJob({ namespace: cluster.namespace, body: runnerJob('runner-free', 'free') });
  const waiting = await waitPendingForQuota('runner-free');
  assert.equal(waiting.spec.priority, 100);
  assert.ok(await suspended('runner-free'));
});
