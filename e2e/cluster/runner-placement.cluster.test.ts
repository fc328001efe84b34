// Runner pod placement (FFOP_RUNNER_NODE_SELECTOR, _TOLERATIONS, _PRIORITY_CLASS, _HOST_NETWORK) reaches
// the Job's pod template, and the pods the real Job controller makes from it. No node runs them.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { BatchV1Api, CoreV1Api, SchedulingV1Api } from '@kubernetes/client-node';
import { parseFfmpegCommand } from '../../core/command-line/parse.ts';
import { jobName } from '../../core/jobs/job-name.ts';
import type { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { SERVICE_ACCOUNTS } from '../../core/k8s/names.ts';
import { createLogger } from '../../core/logger.ts';
import { KubernetesBackend, type KubernetesBackendOptions } from '../../operator/kubernetes-backend.ts';
import { startCluster, type Cluster } from './cluster.ts';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster();
  // Pods are refused until the ServiceAccount they name exists.
  await cluster.kubeconfig
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace: cluster.namespace, body: { metadata: { name: SERVICE_ACCOUNTS.runner } } });
});
after(async () => {
  await cluster?.stop();
});

/** Creates one step's Job with these placement options and returns it as stored, with its first pod. */
async function jobWith(placement: Partial<KubernetesBackendOptions>) {
  const backend = new KubernetesBackend({
    kubeconfig: cluster.kubeconfig,
    namespace: cluster.namespace,
    events: {} as JobEventsRepo, // not started: ensureJob only applies the Job
    logger: createLogger('silent'),
    runnerImage: 'ffmpeg-operator-runner:test',
    reportUrl: 'http://api.example:8080/internal/v1/job-events',
    tokenSecret: 'secret',
    ownerOf: () => null,
    ...placement,
  });
  const commandId = randomUUID();
  const ref = { name: jobName(commandId, 0, 1), commandId, step: 0, attempt: 1 };
  await backend.ensureJob({
    ref,
    accountId: 'acct',
    vcpus: 1,
    deadlineSeconds: 60,
    spec: {
      commandId,
      step: 0,
      command: parseFfmpegCommand('-f lavfi -i testsrc=duration=0.2 {{out_1}}', {
        inputAliases: new Set(),
        outputAliases: new Set(['out_1']),
      }),
      inputs: [],
      outputs: [{ alias: 'out_1', fileName: 'o.mp4', kind: 'file', uploadUrl: 'http://storage.example/o.mp4' }],
      threads: 1,
      timeoutSeconds: 10,
      download: { maxBytes: 1e6, timeoutSeconds: 10, allow: [] },
    },
  });
  const job = await cluster.kubeconfig.makeApiClient(BatchV1Api).readNamespacedJob({ name: ref.name, namespace: cluster.namespace });
  const core = cluster.kubeconfig.makeApiClient(CoreV1Api);
  for (let i = 0; i < 300; i++) {
    const pods = await core.listNamespacedPod({ namespace: cluster.namespace, labelSelector: `job-name=${ref.name}` });
    if (pods.items[0]) return { job: job.spec!.template.spec!, pod: pods.items[0].spec! };
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`the Job controller made no pod for ${ref.name}`);
}

test('node selector, tolerations, priority class and host network reach the runner pods', async () => {
  await cluster.kubeconfig
    .makeApiClient(SchedulingV1Api)
    .createPriorityClass({ body: { metadata: { name: 'ffop-test-runners' }, value: 1000 } });
  const tolerations = [{ key: 'media', operator: 'Equal' as const, value: 'yes', effect: 'NoSchedule' as const }];
  const { job, pod } = await jobWith({
    nodeSelector: { 'node-pool': 'media' },
    tolerations,
    priorityClassName: 'ffop-test-runners',
    hostNetwork: true,
  });
  for (const spec of [job, pod]) {
    assert.deepEqual(spec.nodeSelector, { 'node-pool': 'media' });
    assert.ok(spec.tolerations?.some((t) => t.key === 'media' && t.operator === 'Equal' && t.value === 'yes' && t.effect === 'NoSchedule'));
    assert.equal(spec.priorityClassName, 'ffop-test-runners');
    assert.equal(spec.hostNetwork, true);
    assert.equal(spec.dnsPolicy, 'ClusterFirstWithHostNet');
  }
  // The Priority admission plugin resolved the class: the pod carries its value.
  assert.equal(pod.priority, 1000);
});

test('without placement settings the pods have none of it', async () => {
  const { job } = await jobWith({});
  assert.equal(job.nodeSelector, undefined);
  assert.equal(job.tolerations, undefined);
  assert.equal(job.priorityClassName, undefined);
  assert.ok(!job.hostNetwork);
  assert.equal(job.dnsPolicy, 'ClusterFirst');
});
