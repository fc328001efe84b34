// Cluster mode as a platform team runs it, on a real node: the images built here by
// scripts/build-images.sh, imported into containerd; kubelet and kube-scheduler (e2e/node/start.sh)
// against the test control plane; the Helm chart installed with `helm install`; PostgreSQL and an S3
// server (versitygw) as the external services the chart expects. Runs inside e2e/node/sandbox.sh,
// whose network holds nothing but these: the servers listen on the node's address there.
//
// The API and operator pods use the node's network (`hostNetwork`): the sandbox has no kube-proxy
// or cluster DNS, so they reach the API server and PostgreSQL on 127.0.0.1. Runner pods do not: they
// run on the CNI bridge and reach the API and S3 on the node's address, like pods anywhere.
//
// With `nodes: 2` a second node (node-2: its own containerd and kubelet, address 10.213.0.2, pods on
// a bridge of their own) joins the same sandbox. The chart's pods stay on the first node (they share
// the sandbox's network, where only one API can listen on its port); runner pods go to either node.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminClient } from '../../core/storage/testing/s3-test-server.ts';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { openDatabase, type Database } from '../../core/db/database.ts';
import { ApiClient } from '../harness.ts';
import { startKueue } from '../kueue/kueue.ts';
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
  /** The first node's address, where the API, S3 and the test's servers listen. */
  nodeIp: string;
  /**
   * Names of the nodes, the first node first: `localhost`, which runs the chart's API and operator pods
   * and kube-scheduler, then `node-2` when installed with `nodes: 2`.
   */
  nodes: string[];
  apiUrl: string;
  /** The first API key, made as NOTES.txt says (kubectl exec ... cli.js). */
  key: string;
  values: Record<string, unknown>;
  /** The first node's <node-state-dir>/env (e2e/node/start.sh): CONTAINERD_ADDRESS, FFOP_NODE_CGROUP_ROOT, ... */
  nodeEnv: Record<string, string>;
  /** Every node's env, by node name. */
  nodeEnvs: Record<string, Record<string, string>>;
  database: Database;
  /** What scripts/build-images.sh printed for this tree (FFOP_SERVICE_IMAGE, ..._ARCHIVE), whichever release was installed. */
  images: Record<string, string>;
  client(key?: string): ApiClient;
  /** A new account on `plan` and an API key of it (environment main); returns the key. */
  newAccount(plan: string): Promise<string>;
  /** The same, with the account's id (what `cli.js accounts create` prints, and a Namespace's binding label names). */
  newAccountWithId(plan: string): Promise<{ id: string; key: string }>;
  helm(args: string[]): Promise<ProcessResult>;
  /** Waits until both Deployments have rolled out: helm's --wait counts one with maxUnavailable 1 ready while its only pod is down. */
  rolledOut(): Promise<void>;
  kubectl(args: string[]): Promise<ProcessResult>;
  /** Ids of the containers a node's containerd (default: the first node's) is running now (the k8s.io namespace). */
  runningContainers(node?: string): Promise<string[]>;
  /**
   * `kubectl drain`: cordons the node and evicts its pods through the Eviction API (PodDisruptionBudgets
   * apply; DaemonSet pods stay), then waits until they are gone. Throws if that takes longer than
   * `timeoutSeconds` (default 180).
   */
  drainNode(name: string, opts?: { timeoutSeconds?: number }): Promise<void>;
  /** `kubectl cordon`: the scheduler places no new pod on the node; its running pods stay. */
  cordon(name: string): Promise<void>;
  /** `kubectl uncordon`: the scheduler may place pods on the node again. */
  uncordon(name: string): Promise<void>;
  /**
   * Takes a node away as when its machine dies: kubelet, containerd, the shims and the containers are
   * killed at once (SIGKILL). Nothing tells the control plane: the node lifecycle controller marks the
   * Node Ready=Unknown once its heartbeats are missed (40-50 s here), and its pods stay bound to it for
   * the 300 s they tolerate an unreachable node, unless they tolerate less or the node is tainted
   * `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` (then they are deleted within about 20 s).
   * Not the first node (it holds the chart's pods and the scheduler).
   */
  stopNode(name: string): Promise<void>;
  /** Seconds each stage took: images, control plane, node Ready, chart installed. */
  timings: Record<string, number>;
  close(): Promise<void>;
}

/** The sandbox's nodes: the first is e2e/node/start.sh's default node, the others take `--index N`. */
const nodeName = (index: number) => (index === 1 ? 'localhost' : `node-${index}`);

/**
 * Installs the chart on real nodes in this sandbox: `nodes` (default 1) of them, the runner image
 * imported into every node's containerd, the service image into the first node's.
 */
export async function installOnRealNode(
  opts: {
    allow?: string[];
    nodes?: 1 | 2;
    /** Start Kueue (e2e/kueue/kueue.ts) on the control plane before the chart: for `queueing.mode: kueue`. */
    kueue?: boolean;
    /** Chart values over the fixture's, merged key by key. */ values?: Record<string, unknown>;
    /** Namespaces made before the chart is installed (its RBAC for operator.watchNamespaces names them). */
    namespaces?: string[];
    /**
     * Another release to install instead of this tree's: its chart folder and the images it runs (as
     * scripts/build-images.sh prints them; e2e/node/previous-release.sh). This tree's images are imported
     * too, so that `helm upgrade` to this tree's chart finds them.
     */
    release?: { chart: string; images: Record<string, string> };
  } = {},
): Promise<InstalledService> {
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
    if (opts.kueue) {
      const kueue = await timed('kueue', () => startKueue(cluster));
      cleanups.push(() => kueue.stop()); // before the control plane stops
    }
    const namespace = cluster.namespace;
    for (const name of opts.namespaces ?? []) {
      const made = await cluster.kubectl(['create', 'namespace', name]);
      if (made.code !== 0) throw new Error(`kubectl create namespace ${name} failed: ${made.stderr}`);
    }
    // The images the installed release runs; this tree's too when that is another release's.
    const installImages = opts.release?.images ?? images;
    const archives = (kind: 'SERVICE' | 'RUNNER') => [
      ...new Set([installImages[`FFOP_${kind}_IMAGE_ARCHIVE`], images[`FFOP_${kind}_IMAGE_ARCHIVE`]]),
    ];

    // The first node keeps the state dir of the one-node fixture (`node`); node N has `node-N`.
    const nodeNames = Array.from({ length: opts.nodes ?? 1 }, (_, i) => nodeName(i + 1));
    const stateDirs = new Map(nodeNames.map((name, i) => [name, join(dir, i === 0 ? 'node' : name)]));
    for (const state of stateDirs.values()) cleanups.push(() => must('bash', [join(ROOT, 'e2e/node/stop.sh'), state]));
    // All at once: each imports its images into its own containerd, then waits for its kubelet.
    await timed('node ready', () =>
      Promise.all(
        nodeNames.map((name, i) =>
          must('bash', [
            join(ROOT, 'e2e/node/start.sh'),
            '--index',
            String(i + 1),
            stateDirs.get(name)!,
            cluster.stateDir,
            // Only the first node runs the service image (the chart's pods stay there).
            ...(i === 0 ? archives('SERVICE') : []),
            ...archives('RUNNER'),
          ]),
        ),
      ),
    );
    const nodeEnvs: Record<string, Record<string, string>> = {};
    for (const [name, state] of stateDirs) nodeEnvs[name] = parseEnvText(await readFile(join(state, 'env'), 'utf8'));
    const nodeEnv = nodeEnvs[nodeNames[0]];
    const nodeNamed = (name: string) => {
      if (!stateDirs.has(name)) throw new Error(`no node ${name} here (nodes: ${nodeNames.join(', ')})`);
      return name;
    };

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

    const [serviceRepo, serviceTag] = splitImage(installImages.FFOP_SERVICE_IMAGE);
    const [runnerRepo, runnerTag] = splitImage(installImages.FFOP_RUNNER_IMAGE);
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
      // On the first node, whatever the number of nodes: the nodes share one network, where only one
      // API can listen on its port.
      nodeSelector: { 'kubernetes.io/hostname': nodeNames[0] },
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
    mergeValues(values, opts.values ?? {});
    const valuesFile = join(dir, 'values.json');
    await writeFile(valuesFile, JSON.stringify(values, null, 2));
    const helmBin = join(parseEnvText((await must('bash', [join(ROOT, 'e2e/control-plane/build.sh')])).stdout).FFOP_HELM_BIN_DIR, 'helm');
    const kubeconfigFile = join(cluster.stateDir, 'test.kubeconfig');
    const helm = (args: string[]) => runProcess(helmBin, [`--kubeconfig=${kubeconfigFile}`, `--namespace=${namespace}`, ...args]);
    const kubectl = (args: string[]) => cluster.kubectl(args);

    const installed = await timed('chart installed', () =>
      helm(['install', RELEASE, opts.release?.chart ?? CHART, '-f', valuesFile, '--wait', '--timeout=4m']),
    );
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
    const cli = (args: string[]) => kubectl(['exec', `deploy/${API_DEPLOYMENT}`, '--', 'node', '/app/dist/api/cli/cli.js', ...args]);
    const created = await cli(['accounts', 'create', 'first', '--plan', 'pro']);
    if (created.code !== 0) throw new Error(`cli accounts create failed: ${created.stderr}`);
    const keyOut = await cli(['keys', 'create', 'first']);
    const key = /\b(\S{20,})\s*$/.exec(keyOut.stdout.trim())?.[1];
    if (keyOut.code !== 0 || !key) throw new Error(`cli keys create failed: ${keyOut.stdout} ${keyOut.stderr}`);

    const database = await openDatabase(databaseUrl);
    cleanups.push(() => database.close());
    const accounts = new AccountsRepo(database.db);
    const newAccountWithId = async (plan: string) => {
      const account = await accounts.createAccount(`acct-${randomBytes(4).toString('hex')}`, plan);
      return { id: account.id, key: (await accounts.createKey(account.id, 'main')).key };
    };
    return {
      cluster,
      namespace,
      nodeIp,
      nodes: nodeNames,
      apiUrl,
      key,
      values,
      nodeEnv,
      nodeEnvs,
      database,
      images,
      timings,
      client: (k = key) => new ApiClient(apiUrl, k),
      newAccount: async (plan) => (await newAccountWithId(plan)).key,
      newAccountWithId,
      helm,
      rolledOut,
      kubectl,
      async runningContainers(node = nodeNames[0]) {
        const out = await must('ctr', ['--address', nodeEnvs[nodeNamed(node)].CONTAINERD_ADDRESS, '-n', 'k8s.io', 'tasks', 'ls']);
        return out.stdout
          .split('\n')
          .slice(1)
          .filter((l) => /\bRUNNING\b/.test(l))
          .map((l) => l.split(/\s+/)[0]);
      },
      async drainNode(name, { timeoutSeconds = 180 } = {}) {
        const drained = await kubectl([
          'drain',
          nodeNamed(name),
          '--ignore-daemonsets',
          '--delete-emptydir-data', // runner and chart pods keep their work in emptyDirs
          '--force', // and pods that no controller would make again
          `--timeout=${timeoutSeconds}s`,
        ]);
        if (drained.code !== 0) throw new Error(`kubectl drain ${name} failed: ${drained.stderr}`);
      },
      async cordon(name) {
        const cordoned = await kubectl(['cordon', nodeNamed(name)]);
        if (cordoned.code !== 0) throw new Error(`kubectl cordon ${name} failed: ${cordoned.stderr}`);
      },
      async uncordon(name) {
        const uncordoned = await kubectl(['uncordon', nodeNamed(name)]);
        if (uncordoned.code !== 0) throw new Error(`kubectl uncordon ${name} failed: ${uncordoned.stderr}`);
      },
      async stopNode(name) {
        if (nodeNamed(name) === nodeNames[0]) throw new Error(`${name} holds the chart's pods and kube-scheduler: stop another node`);
        await must('bash', [join(ROOT, 'e2e/node/stop.sh'), '--kill', stateDirs.get(name)!]);
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Sets `over`'s values into `into`, object by object (as helm merges -f files). */
function mergeValues(into: Record<string, unknown>, over: Record<string, unknown>): void {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  for (const [key, value] of Object.entries(over)) {
    const current = into[key];
    if (isObject(current) && isObject(value)) mergeValues(current, value);
    else into[key] = value;
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
