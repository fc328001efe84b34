// The Helm chart against a real kube-apiserver (e2e/control-plane): lint, every rendered document
// validated by a server-side dry run, the values schema's refusals, the single sources of the CRD and
// rbac.yaml, and generated keys that survive `helm upgrade`.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAllYaml, type V1Deployment, type V1Job } from '@kubernetes/client-node';
import { loadClusterConfig } from '../core/cluster-config.ts';
import { loadConfig } from '../core/config.ts';
import { metricsServerSettings, OPERATOR_METRICS_PORT } from '../core/metrics/metrics-server.ts';

const ROOT = join(import.meta.dirname, '..');
const CHART = join(ROOT, 'charts', 'ffmpeg-operator');
const CONTROL_PLANE = join(ROOT, 'e2e', 'control-plane');
const KUEUE_BUILD = join(ROOT, 'e2e', 'kueue', 'build.sh');
const NS = 'ffop-chart-test';

const REQUIRED = {
  'database.url': 'postgres://ffmpeg:pw@postgres.db.svc:5432/ffmpeg',
  's3.endpoint': 'https://s3.example.com',
  's3.bucket': 'media',
  's3.accessKey': 'AKEXAMPLE',
  's3.secretKey': 'secret-example',
};
/** Every optional feature on. */
const EVERYTHING = {
  'database.existingSecret': 'db',
  's3.existingSecret': 's3',
  'jobToken.existingSecret': 'keys',
  'signingKey.existingSecret': 'keys',
  'api.ingress.enabled': 'true',
  'api.ingress.className': 'nginx',
  'api.ingress.hosts[0].host': 'ffmpeg.example.com',
  'api.ingress.tls[0].secretName': 'ffmpeg-tls',
  'api.ingress.tls[0].hosts[0]': 'ffmpeg.example.com',
  'api.autoscaling.enabled': 'true',
  hostNetwork: 'true',
  'runner.hostNetwork': 'true',
  'runner.nodeSelector.node-pool': 'media',
  'runner.tolerations[0].key': 'media',
  'runner.tolerations[0].operator': 'Exists',
  'runner.tolerations[0].effect': 'NoSchedule',
  'runner.priorityClassName': 'batch-low',
  'runner.memoryLimit': '6Gi',
  'runner.confinement': 'bwrap',
  'queueing.maxPendingPods': '4',
  'queueing.maxVcpus': '64',
  'queueing.requeueAfterSeconds': '20',
  'queueing.retrySeconds': '90',
  'networkPolicy.storage.cidrs[0]': '10.20.0.0/16',
  'networkPolicy.extraEgress[0].ports[0].port': '9000',
  'extraEnv[0].name': 'FFOP_LOG_EXTRA',
  'extraEnv[0].value': 'x',
  'podAnnotations.team': 'media',
  'nodeSelector.kubernetes\\.io/os': 'linux',
  'tolerations[0].operator': 'Exists',
  'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key': 'kubernetes.io/arch',
  'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator': 'In',
  'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]': 'amd64',
  'allowAddresses[0]': '10.20.0.0/16',
  'api.trustedProxies[0]': '10.0.0.1',
  'metrics.tokenSecret.name': 'metrics',
  'metrics.serviceMonitor.enabled': 'true',
  'metrics.serviceMonitor.scrapeTimeout': '10s',
  'metrics.serviceMonitor.labels.release': 'prometheus',
};
/** The ServiceMonitor on the pod network: the operator's metrics Service too. */
const SERVICE_MONITOR = { ...REQUIRED, 'metrics.serviceMonitor.enabled': 'true' };

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function run(program: string, args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    // stdin only when there is input: a program that exits without reading it would EPIPE us.
    const child = spawn(program, args, {
      env: { ...process.env, ...opts.env },
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin?.end(opts.input);
  });
}

async function ok(program: string, args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<string> {
  const r = await run(program, args, opts);
  assert.equal(r.code, 0, `${program} ${args.join(' ')} failed:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

async function waitFor(what: string, probe: () => Promise<boolean>, limitMs = 60_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const sets = (values: Record<string, string>) => Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]);

describe('the Helm chart', () => {
  let stateDir = '';
  let env: Record<string, string> = {};
  let helmBin = '';
  let kubectlBin = '';
  const helm = (...args: string[]) => run(helmBin, args, { env });
  const kubectl = (args: string[], input?: string) => ok(kubectlBin, args, { input, env });
  const template = async (values: Record<string, string>) =>
    ok(helmBin, ['template', 'ffmpeg-operator', CHART, '-n', NS, ...sets(values)], { env });

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ffop-chart-test-'));
    const built = Object.fromEntries(
      (await ok('bash', [join(CONTROL_PLANE, 'build.sh')]))
        .trim()
        .split('\n')
        .map((l) => l.split(/=(.*)/s).slice(0, 2)),
    );
    helmBin = join(built.FFOP_HELM_BIN_DIR, 'helm');
    const controlPlane = join(stateDir, 'kcp');
    await ok(join(CONTROL_PLANE, 'start.sh'), [controlPlane], { env: { ...built, FFOP_KCP_OWNER_PID: String(process.pid) } });
    const [kubeconfig, kubectlPath] = (
      await ok('bash', ['-c', 'set -a; . "$1"; printf "%s\\0%s" "$KUBECONFIG" "$KUBECTL"', 'read-env', join(controlPlane, 'env')])
    ).split('\0');
    kubectlBin = kubectlPath;
    // Helm keeps its cache and config in the state dir, not in $HOME.
    env = {
      KUBECONFIG: kubeconfig,
      HELM_CACHE_HOME: join(stateDir, 'helm-cache'),
      HELM_CONFIG_HOME: join(stateDir, 'helm-config'),
      HELM_DATA_HOME: join(stateDir, 'helm-data'),
    };
    await kubectl(['apply', '--server-side', '-f', join(CHART, 'crds')]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/ffmpegcommands.ffmpeg-operator.dev']);
    // The Prometheus Operator's ServiceMonitor kind, so that the chart's ServiceMonitor is validated too.
    await kubectl(['apply', '--server-side', '-f', join(CONTROL_PLANE, 'fixtures', 'servicemonitor-crd-minimal.yaml')]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/servicemonitors.monitoring.coreos.com']);
    // Kueue's CRDs (from its release, e2e/kueue/build.sh), so that the kueue mode's objects are validated too.
    const kueueDir = (await ok('bash', [KUEUE_BUILD])).match(/^FFOP_KUEUE_BIN_DIR=(.*)$/m)![1];
    await kubectl(['apply', '--server-side', '-f', join(kueueDir, 'manifests', 'crds')]);
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(kueueDir, 'manifests', 'crds')]);
    await kubectl(['create', 'namespace', NS]);
  });

  after(async () => {
    if (!stateDir) return;
    await run(join(CONTROL_PLANE, 'stop.sh'), [join(stateDir, 'kcp')]).catch(() => {});
    await rm(stateDir, { recursive: true, force: true });
  });

  test('helm lint --strict passes with the required values', async () => {
    const r = await helm('lint', '--strict', CHART, ...sets(REQUIRED));
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  for (const [what, values] of [
    ['defaults and the required values', REQUIRED],
    ['every optional feature on', EVERYTHING],
    ['the ServiceMonitor on the pod network', SERVICE_MONITOR],
  ] as const) {
    test(`renders with ${what}, and the API server accepts every document (server-side dry run, strict validation)`, async () => {
      const rendered = await template({
        ...(values === EVERYTHING ? { 's3.endpoint': REQUIRED['s3.endpoint'], 's3.bucket': REQUIRED['s3.bucket'] } : {}),
        ...values,
      });
      const out = await kubectl(['apply', '--dry-run=server', '--validate=strict', '-n', NS, '-f', '-'], rendered);
      const kinds = loadAllYaml(rendered)
        .filter(Boolean)
        .map((d: { kind: string }) => d.kind);
      for (const kind of ['ServiceAccount', 'Role', 'RoleBinding', 'Deployment', 'Service', 'PodDisruptionBudget', 'NetworkPolicy']) {
        assert.ok(kinds.includes(kind), `${kind} rendered`);
      }
      assert.equal(out.trim().split('\n').length, kinds.length, out);
    });
  }

  test('with every feature on: HPA, Ingress, existing Secrets, host network, runner placement the operator can parse', async () => {
    const docs = loadAllYaml(
      await template({ 's3.endpoint': REQUIRED['s3.endpoint'], 's3.bucket': REQUIRED['s3.bucket'], ...EVERYTHING }),
    ).filter(Boolean);
    const kinds = docs.map((d: { kind: string }) => d.kind);
    assert.ok(kinds.includes('HorizontalPodAutoscaler') && kinds.includes('Ingress'));
    assert.ok(!kinds.includes('Secret'), 'existing Secrets replace every chart Secret');
    const operator = docs.find((d: V1Deployment) => d.kind === 'Deployment' && d.metadata?.name?.endsWith('-operator')) as V1Deployment;
    const api = docs.find((d: V1Deployment) => d.kind === 'Deployment' && d.metadata?.name?.endsWith('-api')) as V1Deployment;
    assert.equal(api.spec!.replicas, undefined, 'the HPA owns the replica count');
    for (const d of [api, operator]) {
      assert.equal(d.spec!.template.spec!.hostNetwork, true);
      assert.equal(d.spec!.template.spec!.dnsPolicy, 'ClusterFirstWithHostNet');
    }
    const container = operator.spec!.template.spec!.containers[0];
    const plain = Object.fromEntries(container.env!.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
    const cluster = loadClusterConfig({ ...plain, FFOP_JOB_TOKEN_SECRET: 'from-the-secret' });
    assert.deepEqual(cluster.runnerNodeSelector, { 'node-pool': 'media' });
    assert.deepEqual(cluster.runnerTolerations, [{ key: 'media', operator: 'Exists', effect: 'NoSchedule' }]);
    assert.equal(cluster.runnerPriorityClass, 'batch-low');
    assert.equal(cluster.runnerHostNetwork, true);
    assert.equal(cluster.runnerMemoryLimit, '6Gi');
    assert.equal(cluster.runnerConfinement, 'bwrap');
    assert.deepEqual(cluster.queueing, { mode: 'builtin', maxPendingPods: 4, maxVcpus: 64, requeueAfterSeconds: 20, retrySeconds: 90 });
    assert.equal(cluster.namespace, NS);
    assert.equal(cluster.reportUrl, `http://ffmpeg-operator-api.${NS}.svc:8080/internal/v1/job-events`);
    assert.equal(plain.FFOP_PUBLIC_URL, 'https://ffmpeg.example.com');
    const secretRefs = container.env!.filter((e) => e.valueFrom?.secretKeyRef).map((e) => [e.name, e.valueFrom!.secretKeyRef!.name]);
    assert.deepEqual(Object.fromEntries(secretRefs), {
      FFOP_DATABASE_URL: 'db',
      FFOP_S3_ACCESS_KEY: 's3',
      FFOP_S3_SECRET_KEY: 's3',
      FFOP_JOB_TOKEN_SECRET: 'keys',
      FFOP_SIGNING_KEY: 'keys',
      FFOP_METRICS_TOKEN: 'metrics',
    });
    // Placement of the operator's own pods is not the runners' one.
    assert.deepEqual(operator.spec!.template.spec!.nodeSelector, { 'kubernetes.io/os': 'linux' });
  });

  test('defaults: operator Unconfined (bubblewrap), API RuntimeDefault, non-root, read-only root, no capabilities', async () => {
    const docs = loadAllYaml(await template(REQUIRED)).filter(Boolean);
    const deployments = docs.filter((d: V1Deployment) => d.kind === 'Deployment') as V1Deployment[];
    for (const d of deployments) {
      const pod = d.spec!.template.spec!;
      const c = pod.containers[0];
      assert.equal(pod.securityContext!.runAsNonRoot, true);
      assert.equal(pod.securityContext!.seccompProfile!.type, 'RuntimeDefault');
      assert.equal(c.securityContext!.readOnlyRootFilesystem, true);
      assert.deepEqual(c.securityContext!.capabilities!.drop, ['ALL']);
      assert.equal(c.securityContext!.allowPrivilegeEscalation, false);
      assert.ok(!pod.hostNetwork);
      const seccomp = c.securityContext!.seccompProfile?.type;
      assert.equal(seccomp, d.metadata!.name!.endsWith('-operator') ? 'Unconfined' : undefined, d.metadata!.name);
    }
    const operator = deployments.find((d) => d.metadata!.name!.endsWith('-operator'))!;
    assert.equal(operator.spec!.replicas, 2);
    assert.equal(
      operator.spec!.template.spec!.containers[0].env!.find((e) => e.name === 'POD_NAME')!.valueFrom!.fieldRef!.fieldPath,
      'metadata.name',
    );
  });

  test('metrics: their own ports on the API and the operator, Services, the ServiceMonitor only when asked for', async () => {
    type Doc = { kind: string; metadata: { name: string; labels: Record<string, string> }; spec: any };
    // Plain objects (loadAllYaml makes class instances of known kinds), so that deepEqual compares fields only.
    const render = async (values: Record<string, string>) =>
      JSON.parse(JSON.stringify(loadAllYaml(await template(values)).filter(Boolean))) as Doc[];
    const deployment = (docs: Doc[], suffix: string) =>
      docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith(suffix)) as unknown as V1Deployment;
    const envOf = (d: V1Deployment) =>
      Object.fromEntries(d.spec!.template.spec!.containers[0].env!.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
    /** Only the metrics settings: loadConfig would want the S3 keys the pod gets from its Secret. */
    const metricsEnvOf = (d: V1Deployment) => Object.fromEntries(Object.entries(envOf(d)).filter(([k]) => k.startsWith('FFOP_METRICS_')));
    const portsOf = (d: V1Deployment) => (d.spec!.template.spec!.containers[0].ports ?? []).map((p) => `${p.name}:${p.containerPort}`);

    const defaults = await render(REQUIRED);
    const api = deployment(defaults, '-api');
    const operator = deployment(defaults, '-operator');
    assert.deepEqual(portsOf(api), ['http:8080', 'metrics:9465']);
    assert.deepEqual(portsOf(operator), ['metrics:9464']);
    // A token by default: generated into the chart's keys Secret, read by both containers.
    const keysSecret = defaults.find((d) => d.kind === 'Secret' && d.metadata.name.endsWith('-keys')) as unknown as {
      metadata: { name: string };
      data: Record<string, string>;
    };
    assert.ok(Buffer.from(keysSecret.data['metrics-token'], 'base64').length >= 32);
    for (const d of [api, operator]) {
      const token = d.spec!.template.spec!.containers[0].env!.find((e) => e.name === 'FFOP_METRICS_TOKEN');
      assert.deepEqual(token?.valueFrom?.secretKeyRef, { name: keysSecret.metadata.name, key: 'metrics-token' });
    }
    // What the operator's code makes of its environment: all interfaces, its port, the token.
    assert.deepEqual(metricsServerSettings(loadConfig({ ...metricsEnvOf(operator), FFOP_METRICS_TOKEN: 't' }), OPERATOR_METRICS_PORT), {
      host: '0.0.0.0',
      port: 9464,
      token: 't',
    });
    // Without it the process would not serve them on all interfaces.
    assert.throws(() => metricsServerSettings(loadConfig(metricsEnvOf(operator)), OPERATOR_METRICS_PORT), /FFOP_METRICS_TOKEN must be set/);
    assert.equal(envOf(api).FFOP_METRICS_PORT, '9465');
    const services = defaults.filter((d) => d.kind === 'Service');
    const apiService = services.find((d) => d.metadata.name.endsWith('-api'))!;
    assert.deepEqual(
      apiService.spec.ports.map((p: { name: string }) => p.name),
      ['http', 'metrics'],
    );
    const operatorMetrics = services.find((d) => d.metadata.name.endsWith('-operator-metrics'))!;
    assert.equal(operatorMetrics.metadata.labels['app.kubernetes.io/component'], 'operator');
    assert.deepEqual(operatorMetrics.spec.ports, [{ name: 'metrics', port: 9464, targetPort: 'metrics', protocol: 'TCP' }]);
    assert.ok(!defaults.some((d) => d.kind === 'ServiceMonitor'), 'no ServiceMonitor by default');

    const monitored = await render(SERVICE_MONITOR);
    const monitor = monitored.find((d) => d.kind === 'ServiceMonitor')!;
    assert.deepEqual(monitor.spec.endpoints, [
      {
        port: 'metrics',
        path: '/metrics',
        interval: '30s',
        authorization: { type: 'Bearer', credentials: { name: keysSecret.metadata.name, key: 'metrics-token' } },
      },
    ]);
    assert.deepEqual(monitor.spec.namespaceSelector, { matchNames: [NS] });
    // It selects the API's Service and the operator's metrics Service: both carry its labels.
    for (const service of monitored.filter((d) => d.kind === 'Service')) {
      for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels as Record<string, string>))
        assert.equal(service.metadata.labels[k], v);
      assert.ok(['api', 'operator'].includes(service.metadata.labels['app.kubernetes.io/component']));
    }

    // With a token: both containers read it from the Secret, and the ServiceMonitor sends it.
    const everything = await render({ 's3.endpoint': REQUIRED['s3.endpoint'], 's3.bucket': REQUIRED['s3.bucket'], ...EVERYTHING });
    const withToken = everything.find((d) => d.kind === 'ServiceMonitor')!;
    assert.deepEqual(withToken.spec.endpoints[0].authorization, { type: 'Bearer', credentials: { name: 'metrics', key: 'metrics-token' } });
    assert.equal(withToken.spec.endpoints[0].scrapeTimeout, '10s');
    assert.equal(withToken.metadata.labels.release, 'prometheus');
    for (const suffix of ['-api', '-operator']) {
      const token = deployment(everything, suffix).spec!.template.spec!.containers[0].env!.find((e) => e.name === 'FFOP_METRICS_TOKEN');
      assert.deepEqual(token?.valueFrom?.secretKeyRef, { name: 'metrics', key: 'metrics-token' }, suffix);
    }
    // hostNetwork: the operator's replicas would take the same port of a node, so it serves none.
    assert.equal(envOf(deployment(everything, '-operator')).FFOP_METRICS_PORT, 'off');
    assert.deepEqual(portsOf(deployment(everything, '-operator')), []);
    assert.ok(!everything.some((d) => d.kind === 'Service' && d.metadata.name.endsWith('-operator-metrics')));
    assert.deepEqual(portsOf(deployment(everything, '-api')), ['http:8080', 'metrics:9465']);

    // metrics.enabled=false: no metrics port anywhere, and no ServiceMonitor even when asked for.
    const off = await render({ ...SERVICE_MONITOR, 'metrics.enabled': 'false' });
    for (const suffix of ['-api', '-operator']) {
      assert.equal(envOf(deployment(off, suffix)).FFOP_METRICS_PORT, 'off', suffix);
      assert.ok(!portsOf(deployment(off, suffix)).some((p) => p.startsWith('metrics')), suffix);
    }
    assert.ok(!off.some((d) => d.kind === 'ServiceMonitor' || d.metadata.name.endsWith('-operator-metrics')));
    assert.equal(metricsServerSettings(loadConfig(metricsEnvOf(deployment(off, '-operator'))), OPERATOR_METRICS_PORT), null);
  });

  describe('Kueue mode (queueing.mode: kueue)', () => {
    type Doc = { kind: string; apiVersion: string; metadata: { name: string; namespace?: string }; spec?: any; value?: number };
    const KUEUE_MODE = { ...REQUIRED, 'queueing.mode': 'kueue' };
    const render = async (values: Record<string, string>) =>
      JSON.parse(JSON.stringify(loadAllYaml(await template(values)).filter(Boolean))) as Doc[];
    const kueueDocs = (docs: Doc[]) => docs.filter((d) => d.apiVersion.startsWith('kueue.x-k8s.io/'));
    const operatorEnv = (docs: Doc[]) =>
      Object.fromEntries(
        (docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-operator')) as unknown as V1Deployment)
          .spec!.template.spec!.containers[0].env!.filter((e) => e.name.startsWith('FFOP_KUEUE_'))
          .map((e) => [e.name, e.value]),
      );

    test('nothing of Kueue outside kueue mode', async () => {
      const docs = await render(REQUIRED);
      assert.deepEqual(kueueDocs(docs), []);
      assert.deepEqual(operatorEnv(docs), {});
    });

    test('defaults: a LocalQueue, a ClusterQueue with the quotas, a ResourceFlavor, a class per plan; the operator gets their names', async () => {
      const rendered = await template(KUEUE_MODE);
      const docs = JSON.parse(JSON.stringify(loadAllYaml(rendered).filter(Boolean))) as Doc[];
      const byKind = Object.fromEntries(
        ['LocalQueue', 'ClusterQueue', 'ResourceFlavor', 'WorkloadPriorityClass'].map((k) => [
          k,
          kueueDocs(docs).filter((d) => d.kind === k),
        ]),
      );
      assert.equal(kueueDocs(docs).length, 5);
      const [localQueue] = byKind.LocalQueue;
      assert.deepEqual(localQueue.metadata.namespace, NS);
      assert.equal(localQueue.metadata.name, 'ffmpeg-operator');
      assert.equal(localQueue.spec.clusterQueue, 'ffmpeg-operator');
      const [clusterQueue] = byKind.ClusterQueue;
      assert.equal(clusterQueue.metadata.name, 'ffmpeg-operator');
      assert.deepEqual(clusterQueue.spec.namespaceSelector, { matchLabels: { 'kubernetes.io/metadata.name': NS } });
      assert.equal(clusterQueue.spec.cohortName, undefined);
      assert.equal(clusterQueue.spec.preemption, undefined);
      assert.deepEqual(clusterQueue.spec.resourceGroups, [
        {
          coveredResources: ['cpu', 'memory', 'ephemeral-storage'],
          flavors: [
            {
              name: 'ffmpeg-operator',
              resources: [
                { name: 'cpu', nominalQuota: '8' },
                { name: 'memory', nominalQuota: '32Gi' },
                { name: 'ephemeral-storage', nominalQuota: '1Ti' },
              ],
            },
          ],
        },
      ]);
      assert.deepEqual(
        byKind.ResourceFlavor.map((d) => d.metadata.name),
        ['ffmpeg-operator'],
      );
      assert.deepEqual(
        byKind.WorkloadPriorityClass.map((d) => [d.metadata.name, d.value]),
        [
          ['ffmpeg-operator-free', 100],
          ['ffmpeg-operator-pro', 1000],
        ],
      );
      assert.deepEqual(operatorEnv(docs), {
        FFOP_KUEUE_QUEUE_NAME: 'ffmpeg-operator',
        FFOP_KUEUE_PRIORITY_CLASSES: 'free=ffmpeg-operator-free,pro=ffmpeg-operator-pro',
      });
      // The API knows too: Kueue decides the order, so its commands show no queue_position.
      const apiEnv = (docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-api')) as unknown as V1Deployment).spec!
        .template.spec!.containers[0].env!;
      assert.equal(apiEnv.find((e) => e.name === 'FFOP_QUEUEING_MODE')?.value, 'kueue');
      assert.equal(apiEnv.find((e) => e.name === 'FFOP_KUEUE_QUEUE_NAME')?.value, 'ffmpeg-operator');
      // Kueue's own CRDs accept them.
      const out = await kubectl(['apply', '--dry-run=server', '--validate=strict', '-n', NS, '-f', '-'], rendered);
      for (const d of kueueDocs(docs)) assert.ok(out.includes(`${d.kind.toLowerCase()}.kueue.x-k8s.io/${d.metadata.name} created`), out);
    });

    test('custom quotas, cohort, preemption, names and plans', async () => {
      const values = {
        ...KUEUE_MODE,
        'queueing.kueue.localQueue.name': 'media',
        'queueing.kueue.clusterQueue.name': 'media-cq',
        'queueing.kueue.clusterQueue.cpu': '64',
        'queueing.kueue.clusterQueue.memory': '256Gi',
        'queueing.kueue.clusterQueue.ephemeralStorage': '4Ti',
        'queueing.kueue.clusterQueue.cohort': 'batch',
        'queueing.kueue.clusterQueue.preemption.withinClusterQueue': 'LowerPriority',
        'queueing.kueue.resourceFlavor.name': 'on-demand',
        'queueing.kueue.priorityClasses.plans.business': '5000',
        'queueing.kueue.priorityClasses.names.pro': 'gold',
      };
      const rendered = await template(values);
      const docs = JSON.parse(JSON.stringify(loadAllYaml(rendered).filter(Boolean))) as Doc[];
      const clusterQueue = docs.find((d) => d.kind === 'ClusterQueue')!;
      assert.equal(clusterQueue.metadata.name, 'media-cq');
      assert.equal(clusterQueue.spec.cohortName, 'batch');
      assert.deepEqual(clusterQueue.spec.preemption, { withinClusterQueue: 'LowerPriority' });
      assert.equal(clusterQueue.spec.resourceGroups[0].flavors[0].name, 'on-demand');
      assert.deepEqual(
        clusterQueue.spec.resourceGroups[0].flavors[0].resources.map((r: { nominalQuota: string }) => r.nominalQuota),
        ['64', '256Gi', '4Ti'],
      );
      assert.equal(docs.find((d) => d.kind === 'LocalQueue')!.spec.clusterQueue, 'media-cq');
      assert.deepEqual(
        docs.filter((d) => d.kind === 'WorkloadPriorityClass').map((d) => [d.metadata.name, d.value]),
        [
          ['ffmpeg-operator-business', 5000],
          ['ffmpeg-operator-free', 100],
          ['gold', 1000],
        ],
      );
      assert.deepEqual(operatorEnv(docs), {
        FFOP_KUEUE_QUEUE_NAME: 'media',
        FFOP_KUEUE_PRIORITY_CLASSES: 'business=ffmpeg-operator-business,free=ffmpeg-operator-free,pro=gold',
      });
      await kubectl(['apply', '--dry-run=server', '--validate=strict', '-n', NS, '-f', '-'], rendered);
    });

    test('existing ClusterQueue, ResourceFlavor and classes: only the LocalQueue is made, pointing at them', async () => {
      const docs = await render({
        ...KUEUE_MODE,
        'queueing.kueue.clusterQueue.create': 'false',
        'queueing.kueue.clusterQueue.name': 'shared',
        'queueing.kueue.resourceFlavor.create': 'false',
        'queueing.kueue.resourceFlavor.name': 'default-flavor',
        'queueing.kueue.priorityClasses.create': 'false',
        'queueing.kueue.priorityClasses.names.free': 'low',
        'queueing.kueue.priorityClasses.names.pro': 'high',
      });
      assert.deepEqual(
        kueueDocs(docs).map((d) => `${d.kind}/${d.metadata.name}`),
        ['LocalQueue/ffmpeg-operator'],
      );
      assert.equal(kueueDocs(docs)[0].spec.clusterQueue, 'shared');
      assert.equal(operatorEnv(docs).FFOP_KUEUE_PRIORITY_CLASSES, 'free=low,pro=high');
    });

    test('an existing ClusterQueue or ResourceFlavor must be named', async () => {
      for (const key of ['clusterQueue', 'resourceFlavor']) {
        const r = await helm('template', 'x', CHART, ...sets({ ...KUEUE_MODE, [`queueing.kueue.${key}.create`]: 'false' }));
        assert.notEqual(r.code, 0, key);
        assert.match(r.stderr, new RegExp(`queueing\\.kueue\\.${key}\\.name is required when queueing\\.kueue\\.${key}\\.create is false`));
      }
    });
  });

  describe('operator.watchNamespaces', () => {
    type Doc = { kind: string; metadata: { name: string; namespace?: string; annotations?: Record<string, string> }; rules?: unknown[] };
    const render = async (ns: string, release: string, values: Record<string, string>) =>
      JSON.parse(
        JSON.stringify(
          loadAllYaml(await ok(helmBin, ['template', release, CHART, '-n', ns, ...sets({ ...REQUIRED, ...values })], { env })).filter(
            Boolean,
          ),
        ),
      ) as Doc[];
    const watchEnv = (docs: Doc[]) =>
      (
        docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-operator')) as unknown as V1Deployment
      ).spec!.template.spec!.containers[0].env!.find((e) => e.name === 'FFOP_WATCH_NAMESPACES')?.value;
    /** `kubectl auth can-i` as the operator's ServiceAccount of `ns`: true for "yes", false for "no". */
    const canI = async (ns: string, ...args: string[]) => {
      const r = await run(kubectlBin, ['auth', 'can-i', `--as=system:serviceaccount:${ns}:ffmpeg-operator`, ...args], { env });
      if (r.code === 0) return true;
      assert.equal(r.stdout.trim(), 'no', r.stderr);
      return false;
    };
    const commands = 'ffmpegcommands.ffmpeg-operator.dev';
    /** What the operator may do to commands in a watched namespace other than its own, and what not. */
    const watched: [string[], boolean][] = [
      [['get', commands], true],
      [['list', commands], true],
      [['watch', commands], true],
      [['get', commands, '--subresource=status'], true],
      [['patch', commands, '--subresource=status'], true],
      // Their spec and metadata are the team's: the operator writes only their status, by merge patch.
      [['patch', commands], false],
      [['update', commands, '--subresource=status'], false],
      [['create', 'events'], true],
      [['patch', 'events.events.k8s.io'], true],
      [['create', commands], false],
      [['update', commands], false],
      [['delete', commands], false],
      [['create', 'jobs.batch'], false],
      [['get', 'pods'], false],
      [['get', 'secrets'], false],
      [['update', 'leases.coordination.k8s.io'], false],
    ];
    const cluster: [string[], boolean][] = [
      [['get', 'namespaces'], true],
      [['list', 'namespaces'], true],
      [['watch', 'namespaces'], true],
      [['patch', 'namespaces'], false],
      [['update', 'namespaces'], false],
    ];

    test('empty by default: only the release namespace, and the cluster-wide read of Namespaces (their account labels)', async () => {
      const docs = await render(NS, 'ffmpeg-operator', {});
      assert.equal(watchEnv(docs), '');
      assert.ok(!docs.some((d) => d.metadata.name.endsWith('-commands')));
      const reader = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name.endsWith('-namespaces'))!;
      assert.deepEqual(reader.rules, [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }]);
      assert.ok(docs.some((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === reader.metadata.name));
    });

    test('a list: a Role and RoleBinding in each listed namespace, the operator may do its part there and nothing more', async () => {
      const ns = 'ffop-chart-watch';
      const listed = ['ffop-media', 'ffop-tv'];
      for (const n of [ns, ...listed, 'ffop-other']) await kubectl(['create', 'namespace', n]);
      // Its own namespace in the list too: that one keeps its own Role, no second one.
      const docs = await render(ns, 'watch', {
        'operator.watchNamespaces[0]': listed[0],
        'operator.watchNamespaces[1]': ns,
        'operator.watchNamespaces[2]': listed[1],
      });
      assert.equal(watchEnv(docs), `${listed[0]},${ns},${listed[1]}`);
      const scoped = docs.filter((d) => d.metadata.name.endsWith('-commands'));
      assert.deepEqual(
        scoped.map((d) => `${d.kind}/${d.metadata.namespace}`).sort(),
        listed.flatMap((n) => [`Role/${n}`, `RoleBinding/${n}`]).sort(),
      );
      const rbac = await ok(
        helmBin,
        [
          'template',
          'watch',
          CHART,
          '-n',
          ns,
          '--show-only',
          'templates/rbac.yaml',
          ...sets({ ...REQUIRED, 'operator.watchNamespaces[0]': listed[0], 'operator.watchNamespaces[1]': listed[1] }),
        ],
        { env },
      );
      await kubectl(['apply', '-f', '-'], rbac);
      await waitFor(
        'the bindings',
        async () => (await canI(ns, 'list', commands, '-n', listed[1])) && (await canI(ns, 'list', 'namespaces')),
      );
      for (const n of listed)
        for (const [args, allowed] of watched) assert.equal(await canI(ns, ...args, '-n', n), allowed, `${n}: ${args.join(' ')}`);
      for (const [args, allowed] of cluster) assert.equal(await canI(ns, ...args), allowed, args.join(' '));
      assert.equal(await canI(ns, 'get', commands, '-n', 'ffop-other'), false, 'a namespace not listed');
      assert.equal(await canI(ns, 'create', 'jobs.batch', '-n', ns), true, 'its own namespace as before');
    });

    test('"*": a ClusterRole and ClusterRoleBinding for commands in every namespace, still no Jobs or Secrets elsewhere', async () => {
      const ns = 'ffop-chart-all';
      await kubectl(['create', 'namespace', ns]);
      const docs = await render(ns, 'all', { 'operator.watchNamespaces[0]': '*' });
      assert.equal(watchEnv(docs), '*');
      const scoped = docs.filter((d) => d.metadata.name.endsWith('-commands'));
      assert.deepEqual(scoped.map((d) => d.kind).sort(), ['ClusterRole', 'ClusterRoleBinding']);
      const rbac = await ok(
        helmBin,
        [
          'template',
          'all',
          CHART,
          '-n',
          ns,
          '--show-only',
          'templates/rbac.yaml',
          ...sets({ ...REQUIRED, 'operator.watchNamespaces[0]': '*' }),
        ],
        { env },
      );
      await kubectl(['apply', '-f', '-'], rbac);
      await waitFor('the bindings', async () => canI(ns, 'list', commands, '-n', 'ffop-anywhere'));
      for (const n of ['ffop-anywhere', 'default'])
        for (const [args, allowed] of watched) assert.equal(await canI(ns, ...args, '-n', n), allowed, `${n}: ${args.join(' ')}`);
      for (const [args, allowed] of cluster) assert.equal(await canI(ns, ...args), allowed, args.join(' '));
      assert.equal(await canI(ns, 'list', commands, '--all-namespaces'), true);
    });
  });

  describe('the CRD upgrade hook (crdUpgradeHook)', () => {
    type Doc = {
      kind: string;
      metadata: { name: string; annotations?: Record<string, string> };
      data?: Record<string, string>;
      rules?: unknown[];
      subjects?: unknown[];
    };
    const render = async (values: Record<string, string>) =>
      JSON.parse(JSON.stringify(loadAllYaml(await template(values)).filter(Boolean))) as Doc[];
    const hookDocs = (docs: Doc[]) => docs.filter((d) => d.metadata.annotations?.['helm.sh/hook']);

    test('pre-upgrade: ServiceAccount, RBAC and the CRD in a ConfigMap first, then the Job; all deleted when it succeeds', async () => {
      const hooks = hookDocs(await render(REQUIRED));
      assert.deepEqual(hooks.map((d) => d.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'Job', 'ServiceAccount']);
      for (const d of hooks) {
        assert.equal(d.metadata.annotations!['helm.sh/hook'], 'pre-upgrade', d.kind);
        assert.equal(d.metadata.annotations!['helm.sh/hook-delete-policy'], 'before-hook-creation,hook-succeeded', d.kind);
        const weight = Number(d.metadata.annotations!['helm.sh/hook-weight']);
        if (d.kind === 'Job') assert.equal(weight, 0);
        else assert.ok(weight < 0, `${d.kind} is made before the Job`);
      }
      const configMap = hooks.find((d) => d.kind === 'ConfigMap')!;
      assert.equal(
        configMap.data!['ffmpegcommand.yaml'],
        await readFile(join(CHART, 'crds', 'ffmpegcommand.yaml'), 'utf8'),
        'the chart CRD, byte for byte',
      );
      const role = hooks.find((d) => d.kind === 'ClusterRole')!;
      assert.deepEqual(role.rules, [
        {
          apiGroups: ['apiextensions.k8s.io'],
          resources: ['customresourcedefinitions'],
          resourceNames: ['ffmpegcommands.ffmpeg-operator.dev'],
          verbs: ['get', 'patch'],
        },
      ]);
      const sa = hooks.find((d) => d.kind === 'ServiceAccount')!;
      assert.deepEqual(hooks.find((d) => d.kind === 'ClusterRoleBinding')!.subjects, [
        { kind: 'ServiceAccount', name: sa.metadata.name, namespace: NS },
      ]);
    });

    test('the Job runs operator/apply-crd.ts from the service image, placed and connected like the operator', async () => {
      const docs = await render({
        's3.endpoint': REQUIRED['s3.endpoint'],
        's3.bucket': REQUIRED['s3.bucket'],
        ...EVERYTHING,
        'operator.extraEnv[0].name': 'KUBERNETES_SERVICE_HOST',
        'operator.extraEnv[0].value': '10.1.2.3',
      });
      const job = hookDocs(docs).find((d) => d.kind === 'Job') as unknown as V1Job;
      const operator = docs.find((d) => d.kind === 'Deployment' && d.metadata.name.endsWith('-operator')) as unknown as V1Deployment;
      const pod = job.spec!.template.spec!;
      const operatorPod = operator.spec!.template.spec!;
      const [container] = pod.containers;
      const operatorContainer = operatorPod.containers[0];
      assert.equal(container.image, operatorContainer.image);
      assert.equal(container.imagePullPolicy, operatorContainer.imagePullPolicy);
      assert.deepEqual(container.command, ['node', '/app/dist/operator/apply-crd.js', '/crd/ffmpegcommand.yaml']);
      assert.equal(pod.serviceAccountName, hookDocs(docs).find((d) => d.kind === 'ServiceAccount')!.metadata.name);
      assert.equal(pod.restartPolicy, 'Never');
      for (const key of [
        'hostNetwork',
        'dnsPolicy',
        'nodeSelector',
        'tolerations',
        'affinity',
        'imagePullSecrets',
        'securityContext',
      ] as const) {
        assert.deepEqual(pod[key], operatorPod[key], key);
      }
      assert.equal(pod.hostNetwork, true);
      assert.deepEqual(container.securityContext, {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      // extraEnv and operator.extraEnv, as the operator gets them (how it reaches the API server).
      assert.deepEqual(container.env, [
        { name: 'FFOP_LOG_EXTRA', value: 'x' },
        { name: 'KUBERNETES_SERVICE_HOST', value: '10.1.2.3' },
      ]);
      for (const e of container.env ?? [])
        assert.ok(
          operatorContainer.env!.some((o) => o.name === e.name && o.value === e.value),
          e.name,
        );
      assert.deepEqual(container.volumeMounts, [{ name: 'crd', mountPath: '/crd', readOnly: true }]);
      assert.equal(pod.volumes![0].configMap!.name, hookDocs(docs).find((d) => d.kind === 'ConfigMap')!.metadata.name);
    });

    test('crdUpgradeHook.enabled=false: no hook at all', async () => {
      assert.deepEqual(hookDocs(await render({ ...REQUIRED, 'crdUpgradeHook.enabled': 'false' })), []);
    });
  });

  describe('values.schema.json refuses wrong values with a clear message', () => {
    const { 'database.url': _, ...withoutDatabaseUrl } = REQUIRED;
    const cases: [string, string[], RegExp[]][] = [
      [
        'replicaCount not a number',
        sets({ ...REQUIRED, 'api.replicaCount': 'two' }),
        [/at '\/api\/replicaCount': got string, want integer/],
      ],
      ['an unknown top-level key', [...sets(REQUIRED), '--set', 'replicas=2'], [/at '': additional properties 'replicas' not allowed/]],
      ['an unknown key in api', [...sets(REQUIRED), '--set', 'api.replica=2'], [/at '\/api': additional properties 'replica' not allowed/]],
      ['no database URL and no existingSecret', sets(withoutDatabaseUrl), [/at '\/database': missing property 'url'/]],
      ['an empty database URL', sets({ ...REQUIRED, 'database.url': '' }), [/at '\/database\/url': minLength: got 0, want 1/]],
      [
        'no S3 settings at all',
        sets({ 'database.url': REQUIRED['database.url'] }),
        [/at '\/s3': missing properties 'endpoint', 'bucket'/, /at '\/s3': missing properties 'accessKey', 'secretKey'/],
      ],
      [
        'an unknown runner confinement',
        sets({ ...REQUIRED, 'runner.confinement': 'none' }),
        [/at '\/runner\/confinement': value must be one of 'bwrap-or-pod', 'bwrap'/],
      ],
      [
        'a toleration with a bad operator',
        sets({ ...REQUIRED, 'runner.tolerations[0].operator': 'In' }),
        [/at '\/runner\/tolerations\/0\/operator': value must be one of 'Exists', 'Equal'/],
      ],
      [
        'a ServiceMonitor interval that is not a Prometheus duration',
        sets({ ...REQUIRED, 'metrics.serviceMonitor.interval': '30 seconds' }),
        [/at '\/metrics\/serviceMonitor\/interval'/],
      ],
      ['a metrics port out of range', sets({ ...REQUIRED, 'metrics.operatorPort': '70000' }), [/at '\/metrics\/operatorPort'/]],
      [
        'a Kueue quota that is not a quantity',
        sets({ ...REQUIRED, 'queueing.kueue.clusterQueue.cpu': 'lots' }),
        [/at '\/queueing\/kueue\/clusterQueue\/cpu'/],
      ],
      [
        'a watched namespace that is not a namespace name',
        sets({ ...REQUIRED, 'operator.watchNamespaces[0]': 'Media_Team' }),
        [/at '\/operator\/watchNamespaces'/, /'Media_Team' does not match pattern/],
      ],
      [
        '"*" together with namespace names',
        sets({ ...REQUIRED, 'operator.watchNamespaces[0]': '*', 'operator.watchNamespaces[1]': 'media' }),
        [/at '\/operator\/watchNamespaces': 'oneOf' failed, none matched/],
      ],
      [
        'a watched namespace twice',
        sets({ ...REQUIRED, 'operator.watchNamespaces[0]': 'media', 'operator.watchNamespaces[1]': 'media' }),
        [/at '\/operator\/watchNamespaces': items at 0 and 1 are equal/],
      ],
      [
        'crdUpgradeHook.enabled not a boolean',
        sets({ ...REQUIRED, 'crdUpgradeHook.enabled': 'sometimes' }),
        [/at '\/crdUpgradeHook\/enabled'/],
      ],
      [
        'a priority class for a plan name the service refuses',
        sets({ ...REQUIRED, 'queueing.kueue.priorityClasses.plans.Pro_Plan': '10' }),
        [/invalid propertyName 'Pro_Plan'/, /'Pro_Plan' does not match pattern/],
      ],
    ];
    for (const [what, args, messages] of cases) {
      test(what, async () => {
        const r = await helm('template', 'x', CHART, ...args);
        assert.notEqual(r.code, 0, 'helm accepted it');
        assert.match(r.stderr, /values don't meet the specifications of the schema/);
        for (const message of messages) assert.match(r.stderr, message);
      });
    }
  });

  test('the chart CRD is crds/ffmpegcommand.yaml, byte for byte', async () => {
    assert.equal(
      await readFile(join(CHART, 'crds', 'ffmpegcommand.yaml'), 'utf8'),
      await readFile(join(ROOT, 'crds', 'ffmpegcommand.yaml'), 'utf8'),
      'run charts/render-manifests.sh',
    );
  });

  test('operator/manifests/rbac.yaml is the chart rendering for namespace ffmpeg-operator', async () => {
    const rendered = await ok('bash', [join(ROOT, 'charts', 'render-manifests.sh'), '--stdout'], { env: { HELM: helmBin } });
    assert.equal(await readFile(join(ROOT, 'operator', 'manifests', 'rbac.yaml'), 'utf8'), rendered, 'run charts/render-manifests.sh');
  });

  test('helm install, then upgrade: generated keys are kept; NOTES say how to get the first API key', async () => {
    const release = 'ffop';
    const installed = await helm('install', release, CHART, '-n', NS, ...sets(REQUIRED));
    assert.equal(installed.code, 0, installed.stderr);
    assert.match(
      installed.stdout,
      new RegExp(`kubectl exec -n ${NS} deploy/ffop-ffmpeg-operator-api -- node /app/dist/api/cli/cli.js accounts create acme`),
    );
    assert.match(installed.stdout, /node \/app\/dist\/api\/cli\/cli\.js keys create acme/);
    assert.match(installed.stdout, /this chart's pre-upgrade hook\s+\(a Job\) applies the chart's CRD on every `helm upgrade`/);
    const keys = async () =>
      JSON.parse(await kubectl(['get', 'secret', '-n', NS, 'ffop-ffmpeg-operator-keys', '-o', 'jsonpath={.data}'])) as Record<
        string,
        string
      >;
    const before = await keys();
    assert.ok(Buffer.from(before['job-token-secret'], 'base64').length >= 32);
    assert.ok(Buffer.from(before['signing-key'], 'base64').length >= 32);
    assert.ok(Buffer.from(before['metrics-token'], 'base64').length >= 32);
    // No node runs pods here, so the CRD upgrade hook's Job would never finish: off for this upgrade
    // (operator/apply-crd.test.ts runs its program with the hook's RBAC, and the tests above its objects).
    const upgraded = await helm(
      'upgrade',
      release,
      CHART,
      '-n',
      NS,
      ...sets({ ...REQUIRED, logLevel: 'debug', 'crdUpgradeHook.enabled': 'false' }),
    );
    assert.equal(upgraded.code, 0, upgraded.stderr);
    assert.deepEqual(await keys(), before);
    const uninstalled = await helm('uninstall', release, '-n', NS, '--wait');
    assert.equal(uninstalled.code, 0, uninstalled.stderr);
  });
});
