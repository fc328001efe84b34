// Cluster mode under test: a real control plane (e2e/control-plane), the CRD and the RBAC manifests
// as written, the test node agent (the kubelet's stand-in) running runner pods as local processes,
// PostgreSQL, and the API and the operator in this process, each authenticated as its own
// ServiceAccount with exactly the manifests' permissions. Storage is a local folder served by the
// API (every "pod" runs on this machine); real clusters use S3.
import { randomBytes } from 'node:crypto';
import { testConfinement } from '../../core/confine/testing/test-confinement.ts';
import { FileProber } from '../../core/media/file-prober.ts';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { startClusterApi } from '../../api/cluster/start-cluster-api.ts';
import { storageFilesRoutes } from '../../api/routes/storage-files.ts';
import { openDatabase, type Database } from '../../core/db/database.ts';
import { createTestDatabaseUrl } from '../../core/db/testing/test-database.ts';
import { RUNNER_CONTAINER, SERVICE_ACCOUNTS } from '../../core/k8s/names.ts';
import { runnerNodeArgs } from '../../core/jobs/runner-contract.ts';
import { createLogger } from '../../core/logger.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import type { OutputMultipartSettings } from '../../core/jobs/output-parts.ts';
import { startOperator, type RunningOperator } from '../../operator/operator.ts';
import { ApiClient, freePort } from '../harness.ts';
import { parseEnvText, runProcess, startCluster, type Cluster } from './cluster.ts';
import { startNodeAgent, type NodeAgent } from './node-agent.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ClusterService {
  cluster: Cluster;
  database: Database;
  /** The test database's postgres:// URL (for a process of its own, e.g. an operator started apart). */
  databaseUrl: string;
  storage: LocalStorage;
  agent: NodeAgent;
  apiUrl: string;
  key: string;
  /** What an operator authenticates with, and the secret of runner tokens (for tests that build their own backend). */
  operatorKubeConfig: KubeConfig;
  tokenSecret: string;
  podsDir: string;
  client(key?: string): ApiClient;
  newAccount(plan: string): Promise<string>;
  /** The operator currently running (replaced by restartOperator). */
  operator: RunningOperator;
  startOperator(identity: string): Promise<RunningOperator>;
  restartOperator(): Promise<void>;
  close(): Promise<void>;
}

export async function startClusterService(
  opts: {
    allow?: string[];
    minRequestTimeout?: number;
    withOperator?: boolean;
    /** Which outputs go up in parts (the API's plans and the operator's specs and checks agree on it). */
    outputMultipart?: OutputMultipartSettings;
    /**
     * Namespaces (made here) where the operator also takes in FfmpegCommands people make, with the RBAC the
     * chart renders for its operator.watchNamespaces value.
     */
    watchNamespaces?: string[];
  } = {},
): Promise<ClusterService> {
  if (!process.env.FFOP_TEST_DATABASE_URL?.startsWith('postgres'))
    throw new Error('cluster tests need FFOP_TEST_DATABASE_URL=postgres://... (scripts/test.sh sets it)');
  const logger = createLogger(process.env.FFOP_TEST_LOG_LEVEL ?? 'silent');
  const dir = await mkdtemp(join(tmpdir(), 'ffop-cluster-'));
  const cluster = await startCluster({ minRequestTimeout: opts.minRequestTimeout });
  const ns = cluster.namespace;
  const rewrite = async (path: string) =>
    (await readFile(join(ROOT, path), 'utf8')).replaceAll('namespace: ffmpeg-operator', `namespace: ${ns}`);
  await cluster.applyYaml(await rewrite('crds/ffmpegcommand.yaml'));
  await cluster.applyYaml(await rewrite('operator/manifests/rbac.yaml'));
  await waitForCrd(cluster);
  if (opts.watchNamespaces) {
    for (const name of opts.watchNamespaces) await cluster.kubectl(['create', 'namespace', name]);
    await cluster.applyYaml(await chartRbac(ns, opts.watchNamespaces));
  }
  const operatorKc = await cluster.serviceAccountKubeConfig(SERVICE_ACCOUNTS.operator, ns);
  const apiKc = await cluster.serviceAccountKubeConfig(SERVICE_ACCOUNTS.api, ns);

  const db = await createTestDatabaseUrl();
  const database = await openDatabase(db.url);
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const signingKey = randomBytes(32).toString('hex');
  const storage = new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: apiUrl, signingKey });
  const tokenSecret = randomBytes(32).toString('hex');
  const api = await startClusterApi({
    kubeconfig: apiKc,
    namespace: ns,
    database,
    storage,
    storageRoutes: storageFilesRoutes(storage),
    logger,
    tokenSecret,
    host: '127.0.0.1',
    port,
    uploadTtlSeconds: 3600,
    reportLimits: opts.outputMultipart ? { outputMultipart: opts.outputMultipart } : undefined,
  });
  const agent = await startNodeAgent({
    kubeconfig: cluster.kubeconfig,
    nodeName: 'ffop-test-node',
    namespace: ns,
    runnerCommand: (pod) =>
      pod.spec?.containers?.[0]?.name === RUNNER_CONTAINER ? { program: process.execPath, args: runnerNodeArgs(), cwd: ROOT } : null,
  });
  const { confinement, uids } = await testConfinement();
  const prober = new FileProber({ confinement, uids });
  const launch = async (identity: string) => {
    const op = startOperator({
      prober,
      kubeconfig: operatorKc,
      namespace: ns,
      database,
      storage,
      logger,
      identity,
      runnerImage: 'ffmpeg-operator-runner:test',
      reportUrl: `${apiUrl}/internal/v1/job-events`,
      tokenSecret,
      settings: {
        downloadMaxBytes: 1e9,
        downloadTimeoutSeconds: 60,
        uploadAllowanceSeconds: 60,
        allowAddresses: opts.allow ?? [],
        workDir: join(dir, 'operator-work'),
        abandonedUploadSeconds: 7 * 86400,
      },
      leaseSeconds: 4,
      watchNamespaces: opts.watchNamespaces ? [ns, ...opts.watchNamespaces] : undefined,
      runnerWorkRoot: join(dir, 'pods'),
      outputMultipart: opts.outputMultipart,
    });
    return op;
  };
  const accounts = api.accounts;
  const main = await accounts.createAccount('default', 'pro');
  const key = (await accounts.createKey(main.id, 'main')).key;
  const svc: ClusterService = {
    cluster,
    database,
    databaseUrl: db.url,
    storage,
    agent,
    apiUrl,
    key,
    operatorKubeConfig: operatorKc,
    tokenSecret,
    podsDir: join(dir, 'pods'),
    client: (k = key) => new ApiClient(apiUrl, k),
    newAccount: async (plan) => {
      const a = await accounts.createAccount(`acct-${randomBytes(4).toString('hex')}`, plan);
      return (await accounts.createKey(a.id, 'main')).key;
    },
    operator: await launch('operator-1'),
    startOperator: launch,
    async restartOperator() {
      await svc.operator.stop();
      svc.operator = await launch(`operator-${Date.now()}`);
      await svc.operator.leading;
    },
    async close() {
      await svc.operator.stop().catch(() => {});
      await agent.stop().catch(() => {});
      await api.close().catch(() => {});
      await database.close().catch(() => {});
      await db.drop().catch(() => {});
      await cluster.stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
  await svc.operator.leading;
  if (opts.withOperator === false) await svc.operator.stop();
  return svc;
}

/** templates/rbac.yaml as the chart renders it in `namespace` with operator.watchNamespaces set. */
async function chartRbac(namespace: string, watchNamespaces: string[]): Promise<string> {
  const build = await runProcess('bash', [join(ROOT, 'e2e/control-plane/build.sh')]);
  const helm = join(parseEnvText(build.stdout).FFOP_HELM_BIN_DIR, 'helm');
  const required = [
    'database.url=postgres://unused',
    's3.endpoint=https://unused',
    's3.bucket=unused',
    's3.accessKey=unused',
    's3.secretKey=unused',
  ];
  const args = [
    'template',
    'ffmpeg-operator',
    join(ROOT, 'charts/ffmpeg-operator'),
    '--namespace',
    namespace,
    '--show-only',
    'templates/rbac.yaml',
  ];
  for (const value of [...required, `operator.watchNamespaces={${watchNamespaces.join(',')}}`]) args.push('--set', value);
  const rendered = await runProcess(helm, args);
  if (rendered.code !== 0) throw new Error(`helm template failed: ${rendered.stderr}`);
  return rendered.stdout;
}

async function waitForCrd(cluster: Cluster): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const r = await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=10s', 'crd/ffmpegcommands.ffmpeg-operator.dev']);
    if (r.code === 0) return;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error('the FfmpegCommand CRD never became Established');
}
