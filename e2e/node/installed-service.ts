// Cluster mode as a platform team runs it, on a real node: the images built here by
// scripts/build-images.sh, imported into containerd; kubelet and kube-scheduler (e2e/node/start.sh)
// against the test control plane; the Helm chart installed with `helm install`; PostgreSQL and an S3
// server (versitygw) as the external services the chart expects. Runs inside e2e/node/sandbox.sh,
// whose network holds nothing but these: the servers listen on the node's address there.
//
// The API and operator pods use the node's network (`hostNetwork`): the sandbox has no kube-proxy
// or cluster DNS, so they reach the API server and PostgreSQL on 127.0.0.1. Runner pods do not: they
// run on the CNI bridge and reach the API and S3 on the node's address, like pods anywhere.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminClient } from '../../core/storage/testing/s3-test-server.ts';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { openDatabase, type Database } from '../../core/db/database.ts';
import { ApiClient } from '../harness.ts';
import { parseEnvText, runProcess, startCluster, type Cluster, type ProcessResult } from '../cluster/cluster.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHART = join(ROOT, 'charts/ffmpeg-operator');
export const RELEASE = 'ffmpeg-operator';
/** Object names the chart gives this release (fullname = the release name here). */
export const API_DEPLOYMENT = `${RELEASE}-api`;
export const OPERATOR_DEPLOYMENT = `${RELEASE}-operator`;
const API_PORT = 8080;
const S3_PORT = 7071;
const PG_PORT = 55433;
const BUCKET = 'media';
/** Every runner pod may use this much memory: enough for everyday steps, little enough to go over on purpose. */
export const RUNNER_MEMORY_LIMIT = '600Mi';

export interface InstalledService {
  cluster: Cluster;
  namespace: string;
  nodeIp: string;
  apiUrl: string;
  /** The first API key, made as NOTES.txt says (kubectl exec ... cli.js). */
  key: string;
  values: Record<string, unknown>;
  nodeEnv: Record<string, string>;
  database: Database;
  client(key?: string): ApiClient;
  newAccount(plan: string): Promise<string>;
  helm(args: string[]): Promise<ProcessResult>;
  /** Waits until both Deployments have rolled out: helm's --wait counts one with maxUnavailable 1 ready while its only pod is down. */
  rolledOut(): Promise<void>;
  kubectl(args: string[]): Promise<ProcessResult>;
  /** Ids of the containers containerd is running now (the k8s.io namespace). */
  runningContainers(): Promise<string[]>;
  /** Seconds each stage took: images, control plane, node Ready, chart installed. */
  timings: Record<string, number>;
  close(): Promise<void>;
}

export async function installOnRealNode(opts: { allow?: string[] } = {}): Promise<InstalledService> {
  if (process.env.FFOP_NODE_SANDBOX !== '1') throw new Error('real-node tests run inside e2e/node/sandbox.sh (scripts/test.sh does that)');
  const nodeIp = process.env.FFOP_NODE_IP!;
  const timings: Record<string, number> = {};
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const start = performance.now();
    try {
      return await fn();
    } finally {
      timings[name] = Math.round((performance.now() - start) / 100) / 10;
    }
  };
  const dir = await mkdtemp(join(tmpdir(), 'ffop-node-'));
  await chmod(dir, 0o755); // PostgreSQL runs as its own user and keeps its cluster in here
  const cleanups: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };
  try {
    const images = parseEnvText((await timed('images', () => must('bash', [join(ROOT, 'scripts/build-images.sh')]))).stdout);
    const cluster = await timed('control plane', () => startCluster());
    cleanups.push(() => cluster.stop());
    const namespace = cluster.namespace;

    cleanups.push(() => must('bash', [join(ROOT, 'e2e/node/stop.sh'), join(dir, 'node')]));
    await timed('node ready', () =>
      must('bash', [
        join(ROOT, 'e2e/node/start.sh'),
        join(dir, 'node'),
        cluster.stateDir,
        images.FFOP_SERVICE_IMAGE_ARCHIVE,
        images.FFOP_RUNNER_IMAGE_ARCHIVE,
      ]),
    );
    const nodeEnv = parseEnvText(await readFile(join(dir, 'node', 'env'), 'utf8'));

    const pgEnv = { ...process.env, FFOP_PG_DIR: join(dir, 'pg'), FFOP_PG_PORT: String(PG_PORT) };
    const databaseUrl = (await must('bash', [join(ROOT, 'scripts/postgres.sh'), 'start'], pgEnv)).stdout.trim();
    cleanups.push(() => must('bash', [join(ROOT, 'scripts/postgres.sh'), 'stop'], pgEnv));
    const s3Env = { ...process.env, FFOP_S3_HOST: nodeIp, FFOP_S3_PORT: String(S3_PORT), FFOP_S3_DIR: join(dir, 's3') };
    const s3 = parseEnvText((await must('bash', [join(ROOT, 'scripts/versitygw.sh'), 'start'], s3Env)).stdout.replaceAll('export ', ''));
    cleanups.push(() => must('bash', [join(ROOT, 'scripts/versitygw.sh'), 'stop'], s3Env));
    const s3Settings = {
      endpoint: s3.FFOP_TEST_S3_ENDPOINT,
      region: s3.FFOP_TEST_S3_REGION,
      accessKey: s3.FFOP_TEST_S3_ACCESS_KEY,
      secretKey: s3.FFOP_TEST_S3_SECRET_KEY,
    };
    await adminClient(s3Settings).makeBucket(BUCKET, s3Settings.region);

    const [serviceRepo, serviceTag] = splitImage(images.FFOP_SERVICE_IMAGE);
    const [runnerRepo, runnerTag] = splitImage(images.FFOP_RUNNER_IMAGE);
    const apiUrl = `http://${nodeIp}:${API_PORT}`;
    const apiServer = new URL(cluster.server);
    const values = {
      image: { repository: serviceRepo, tag: serviceTag, pullPolicy: 'Never' },
      publicUrl: apiUrl,
      database: { url: databaseUrl },
      s3: {
        endpoint: s3Settings.endpoint,
        region: s3Settings.region,
        bucket: BUCKET,
        accessKey: s3Settings.accessKey,
        secretKey: s3Settings.secretKey,
      },
      allowAddresses: opts.allow ?? [],
      hostNetwork: true,
      // No kube-proxy in the sandbox: the in-cluster client goes to the API server directly.
      extraEnv: [
        { name: 'KUBERNETES_SERVICE_HOST', value: apiServer.hostname },
        { name: 'KUBERNETES_SERVICE_PORT', value: apiServer.port },
      ],
      // No CPU requests of their own (null removes the chart's default): the node's 2 CPUs are the
      // runners' (the scheduling test counts on it).
      api: { replicaCount: 1, port: API_PORT, resources: { requests: { cpu: null, memory: '128Mi' } } },
      operator: { replicaCount: 2, resources: { requests: { cpu: null, memory: '128Mi' } } },
      runner: {
        image: { repository: runnerRepo, tag: runnerTag },
        reportUrl: `${apiUrl}/internal/v1/job-events`,
        memoryLimit: RUNNER_MEMORY_LIMIT,
      },
    };
    const valuesFile = join(dir, 'values.json');
    await writeFile(valuesFile, JSON.stringify(values, null, 2));
    const helmBin = join(parseEnvText((await must('bash', [join(ROOT, 'e2e/control-plane/build.sh')])).stdout).FFOP_HELM_BIN_DIR, 'helm');
    const kubeconfigFile = join(cluster.stateDir, 'test.kubeconfig');
    const helm = (args: string[]) => runProcess(helmBin, [`--kubeconfig=${kubeconfigFile}`, `--namespace=${namespace}`, ...args]);
    const kubectl = (args: string[]) => cluster.kubectl(args);

    const installed = await timed('chart installed', () => helm(['install', RELEASE, CHART, '-f', valuesFile, '--wait', '--timeout=4m']));
    if (installed.code !== 0) throw new Error(`helm install failed: ${installed.stderr}\n${await describeFailure(kubectl)}`);
    cleanups.push(() => helm(['uninstall', RELEASE, '--wait']));
    const rolledOut = async () => {
      for (const deploy of [API_DEPLOYMENT, OPERATOR_DEPLOYMENT]) {
        const rolled = await kubectl(['rollout', 'status', `deploy/${deploy}`, '--timeout=180s']);
        if (rolled.code !== 0) throw new Error(`deploy/${deploy} did not roll out: ${rolled.stderr}\n${await describeFailure(kubectl)}`);
      }
    };
    await rolledOut();

    // The first API key, as NOTES.txt tells a new user to make it.
    const cli = (args: string[]) => kubectl(['exec', `deploy/${API_DEPLOYMENT}`, '--', 'node', '/app/dist/api/cli.js', ...args]);
    const created = await cli(['accounts', 'create', 'first', '--plan', 'pro']);
    if (created.code !== 0) throw new Error(`cli accounts create failed: ${created.stderr}`);
    const keyOut = await cli(['keys', 'create', 'first']);
    const key = /\b(\S{20,})\s*$/.exec(keyOut.stdout.trim())?.[1];
    if (keyOut.code !== 0 || !key) throw new Error(`cli keys create failed: ${keyOut.stdout} ${keyOut.stderr}`);

    const database = await openDatabase(databaseUrl);
    cleanups.push(() => database.close());
    const accounts = new AccountsRepo(database.db);
    return {
      cluster,
      namespace,
      nodeIp,
      apiUrl,
      key,
      values,
      nodeEnv,
      database,
      timings,
      client: (k = key) => new ApiClient(apiUrl, k),
      async newAccount(plan) {
        const account = await accounts.createAccount(`acct-${randomBytes(4).toString('hex')}`, plan);
        return (await accounts.createKey(account.id, 'main')).key;
      },
      helm,
      rolledOut,
      kubectl,
      async runningContainers() {
        const out = await must('ctr', ['--address', nodeEnv.CONTAINERD_ADDRESS, '-n', 'k8s.io', 'tasks', 'ls']);
        return out.stdout
          .split('\n')
          .slice(1)
          .filter((l) => /\bRUNNING\b/.test(l))
          .map((l) => l.split(/\s+/)[0]);
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

function splitImage(ref: string): [string, string] {
  const at = ref.lastIndexOf(':');
  return [ref.slice(0, at), ref.slice(at + 1)];
}

/** What a failed install left behind, for the error message. */
async function describeFailure(kubectl: (args: string[]) => Promise<ProcessResult>): Promise<string> {
  const pods = await kubectl(['get', 'pods', '-o', 'wide']);
  const events = await kubectl(['get', 'events', '--sort-by=.lastTimestamp']);
  return `${pods.stdout}\n${events.stdout.split('\n').slice(-25).join('\n')}`;
}

async function must(program: string, args: string[], env?: NodeJS.ProcessEnv): Promise<ProcessResult> {
  const result = await runProcess(program, args, { env });
  if (result.code !== 0)
    throw new Error(`${program} ${args.join(' ')} failed (${result.code}): ${result.stderr.split('\n').slice(-30).join('\n')}`);
  return result;
}
