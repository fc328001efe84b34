// Test fixture: a real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) on
// 127.0.0.1, started by e2e/control-plane/start.sh in a temp state dir, with a fresh namespace for
// the test. No kubelet and no scheduler run: start e2e/cluster/node-agent.ts for pods to run.
// Start one per test file (before/after): a warm start takes about 5 s.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  loadAllYaml,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { sleep } from './list-watch.ts';
import { statusCode } from './node-heartbeat.ts';

const CONTROL_PLANE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../control-plane');
const FIELD_MANAGER = 'ffop-e2e';
/** How long to wait for things the control plane does by itself (a namespace's default SA, a CRD). */
const SETTLE_TIMEOUT_MS = 60_000;

export interface ProcessResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface Cluster {
  /** Cluster-admin; its context's namespace is the test namespace. */
  kubeconfig: KubeConfig;
  /** https://127.0.0.1:<port> */
  server: string;
  caFile: string;
  /** A fresh namespace for this test file. */
  namespace: string;
  stateDir: string;
  /** The KEY=value lines start.sh wrote to <stateDir>/env. */
  env: Record<string, string>;
  /**
   * Server-side applies every document of a YAML file (path) or text; namespaced objects without a
   * namespace go into the test namespace.
   */
  applyYaml(pathOrText: string): Promise<KubernetesObject[]>;
  /** Runs kubectl as cluster-admin, defaulting to the test namespace; never throws on a non-zero exit. */
  kubectl(args: string[], input?: string): Promise<ProcessResult>;
  /** A KubeConfig authenticated as that ServiceAccount (created if missing) by a TokenRequest token. */
  serviceAccountKubeConfig(name: string, namespace?: string): Promise<KubeConfig>;
  /** Stops the control plane and removes its state dir. */
  stop(): Promise<void>;
}

export async function startCluster(opts: { minRequestTimeout?: number } = {}): Promise<Cluster> {
  const build = await runProcess('bash', [join(CONTROL_PLANE_DIR, 'build.sh')]);
  if (build.code !== 0) throw new Error(`build.sh failed (${build.code}): ${tail(build.stderr)}`);
  const binDirs = parseEnvText(build.stdout);

  const stateDir = await mkdtemp(join(tmpdir(), 'ffop-kcp-'));
  const removeState = () => rm(stateDir, { recursive: true, force: true });
  const started = await runProcess('bash', [join(CONTROL_PLANE_DIR, 'start.sh'), stateDir], {
    env: {
      ...process.env,
      ...binDirs,
      // If this test process dies without stop(), the control plane goes with it.
      FFOP_KCP_OWNER_PID: String(process.pid),
      ...(opts.minRequestTimeout !== undefined ? { FFOP_KCP_MIN_REQUEST_TIMEOUT: String(opts.minRequestTimeout) } : {}),
    },
  });
  if (started.code !== 0) {
    await removeState();
    throw new Error(`start.sh failed (${started.code}): ${tail(started.stderr)}`);
  }

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const result = await runProcess('bash', [join(CONTROL_PLANE_DIR, 'stop.sh'), stateDir]);
    if (result.code !== 0) throw new Error(`stop.sh failed (${result.code}): ${tail(result.stderr)}`);
    await removeState();
  };

  try {
    const env = parseEnvText(await readFile(join(stateDir, 'env'), 'utf8'));
    const namespace = `ffop-e2e-${randomBytes(4).toString('hex')}`;
    const admin = new KubeConfig();
    admin.loadFromFile(env.KUBECONFIG);
    await createNamespace(admin.makeApiClient(CoreV1Api), namespace);

    const kubeconfig = withNamespace(admin, namespace);
    const kubeconfigFile = join(stateDir, 'test.kubeconfig');
    await writeFile(kubeconfigFile, kubeconfig.exportConfig(), { mode: 0o600 });
    const core = kubeconfig.makeApiClient(CoreV1Api);

    return {
      kubeconfig,
      server: env.FFOP_KCP_SERVER,
      caFile: env.FFOP_KCP_CA_FILE,
      namespace,
      stateDir,
      env,
      applyYaml: (source) => applyYaml(kubeconfig, source),
      // Discovery is cached per control plane (in its state dir), never in $HOME, where an earlier run's
      // API server on the same port would have left another CRD's versions.
      kubectl: (args, input) =>
        runProcess(env.KUBECTL, [`--kubeconfig=${kubeconfigFile}`, `--cache-dir=${join(stateDir, 'kubectl-cache')}`, ...args], { input }),
      serviceAccountKubeConfig: (name, ns = namespace) =>
        serviceAccountKubeConfig(core, { server: env.FFOP_KCP_SERVER, caFile: env.FFOP_KCP_CA_FILE }, name, ns),
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

async function createNamespace(core: CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } });
  // The ServiceAccount admission plugin rejects pods until the controller made the default SA.
  await waitFor(`ServiceAccount ${name}/default`, async () => {
    try {
      await core.readNamespacedServiceAccount({ name: 'default', namespace: name });
      return true;
    } catch (err) {
      if (statusCode(err) === 404) return false;
      throw err;
    }
  });
}

function withNamespace(kc: KubeConfig, namespace: string): KubeConfig {
  const copy = new KubeConfig();
  copy.loadFromOptions({
    clusters: kc.clusters,
    users: kc.users,
    contexts: kc.contexts.map((context) => ({ ...context, namespace })),
    currentContext: kc.getCurrentContext(),
  });
  return copy;
}

async function applyYaml(kc: KubeConfig, source: string): Promise<KubernetesObject[]> {
  const text = !source.includes('\n') && existsSync(source) ? await readFile(source, 'utf8') : source;
  const client = KubernetesObjectApi.makeApiClient(kc);
  const crds = kc.makeApiClient(ApiextensionsV1Api);
  const applied: KubernetesObject[] = [];
  for (const doc of loadAllYaml(text) as (KubernetesObject | null | undefined)[]) {
    if (!doc) continue;
    // A custom resource right after its CRD: discovery only knows the kind once the CRD is established.
    const result = await retryWhile(isUnknownKind, () =>
      client.patch(doc, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
    applied.push(result);
    if (doc.kind === 'CustomResourceDefinition' && doc.metadata?.name) await waitEstablished(crds, doc.metadata.name);
  }
  return applied;
}

function isUnknownKind(err: unknown): boolean {
  return /Unrecognized API version and kind|Failed to fetch resource metadata/.test(String(err));
}

async function retryWhile<T>(retryable: (err: unknown) => boolean, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!retryable(err) || Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}

async function waitEstablished(crds: ApiextensionsV1Api, name: string): Promise<void> {
  await waitFor(`CRD ${name} to be established`, async () => {
    const crd = await crds.readCustomResourceDefinition({ name });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
  });
}

async function serviceAccountKubeConfig(
  core: CoreV1Api,
  cluster: { server: string; caFile: string },
  name: string,
  namespace: string,
): Promise<KubeConfig> {
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
  }
  // No audiences: the token is for the API server's own audience (its issuer).
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  const user = `system:serviceaccount:${namespace}:${name}`;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'ffop-test', server: cluster.server, caFile: cluster.caFile, skipTLSVerify: false }],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: 'ffop-test', user, namespace }],
    currentContext: user,
  });
  return kc;
}

/** Polls check every 100 ms until it returns true; throws after SETTLE_TIMEOUT_MS. */
async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** KEY=value lines; values as bash printf %q writes them (backslash escapes only). */
export function parseEnvText(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match) continue;
    const [, key, raw] = match;
    if (raw.startsWith("$'")) throw new Error(`unsupported quoting in ${key}=${raw}`);
    env[key] = raw === "''" ? '' : raw.replace(/\\(.)/g, '$1');
  }
  return env;
}

/** Runs a program to its end and collects its output; never throws on a non-zero exit. */
export function runProcess(
  program: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<ProcessResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(program, args, { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolvePromise({
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        code: code ?? (signal ? 128 : 1),
      }),
    );
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

function tail(text: string, lines = 30): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
