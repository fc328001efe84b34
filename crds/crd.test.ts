// The FfmpegCommand CRD and the RBAC manifest against a real kube-apiserver (e2e/control-plane):
// schema validation, immutable spec, status subresource, printer columns and least privilege.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ApiException,
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  loadYaml,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubernetesObject, V1CustomResourceDefinition } from '@kubernetes/client-node';
import { API_VERSION, GROUP, KIND, PLURAL, SERVICE_ACCOUNTS, SHORT_NAME, VERSION } from '../core/k8s/names.ts';
import type { FfmpegCommandSpec, FfmpegCommandStatus } from '../core/k8s/ffmpeg-command.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const CONTROL_PLANE = join(ROOT, 'e2e', 'control-plane');
// The namespace rbac.yaml is written for.
const NS = 'ffmpeg-operator';
const CRD_NAME = `${PLURAL}.${GROUP}`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

interface Cluster {
  kubeconfig: string;
  kubectl: string;
}

/** Reads KUBECONFIG and KUBECTL from start.sh's env file the way a shell would (values may be %q-quoted). */
async function readClusterEnv(envFile: string): Promise<Cluster> {
  const { stdout } = await run('bash', ['-c', 'set -a; . "$1"; printf "%s\\0%s" "$KUBECONFIG" "$KUBECTL"', 'read-env', envFile]);
  const [kubeconfig, kubectl] = stdout.split('\0');
  return { kubeconfig, kubectl };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 60_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function validCommand(name = randomUUID()): {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec: FfmpegCommandSpec;
} {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace: NS },
    spec: {
      commandId: name,
      accountId: 'acct-1',
      environment: 'main',
      commandType: 'FFMPEG_CHAINED_COMMANDS',
      vcpuCount: 2,
      maxCommandRunSeconds: 0.5,
      steps: 2,
      isPrivate: false,
      request: {
        ffmpeg_commands: ['-i {{in_1}} {{out_1}}', '-i {{out_1}} {{out_2}}'],
        input_files: { in_1: 'https://example.com/a.mp4' },
        output_files: { out_1: 'b.mp4', out_2: 'c.mp4' },
        metadata: { n: 1, ok: true, s: 'x' },
      },
    },
  };
}
type Command = ReturnType<typeof validCommand>;

interface StatusCause {
  field?: string;
  message?: string;
  reason?: string;
}

/** The API server's rejection of `action`: HTTP code and the Status causes. */
async function rejection(action: () => Promise<unknown>): Promise<{ code: number; message: string; causes: StatusCause[] }> {
  try {
    await action();
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    const status = JSON.parse(String(err.body)) as { message: string; details?: { causes?: StatusCause[] } };
    return { code: err.code, message: status.message, causes: status.details?.causes ?? [] };
  }
  assert.fail('the API server accepted it');
}

function assertCause(causes: StatusCause[], field: string, text: string) {
  assert.ok(
    causes.some((c) => c.field === field && (c.message ?? '').includes(text)),
    `no cause on ${field} containing ${JSON.stringify(text)} in ${JSON.stringify(causes)}`,
  );
}

/** Rows of kubectl's table output, keyed by header; cells are cut at the header's column starts. */
function parseTable(output: string): Record<string, string>[] {
  const [header, ...rows] = output.trimEnd().split('\n');
  const columns = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index }));
  return rows.map((row) => Object.fromEntries(columns.map((c, i) => [c.name, row.slice(c.at, columns[i + 1]?.at ?? row.length).trim()])));
}

describe('FfmpegCommand CRD and RBAC on a real API server', () => {
  let stateDir = '';
  let cluster: Cluster;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;

  const kubectl = (...args: string[]) =>
    run(cluster.kubectl, [`--cache-dir=${join(stateDir, 'kubectl-cache')}`, ...args], {
      env: { ...process.env, KUBECONFIG: cluster.kubeconfig },
    });

  /** `kubectl auth can-i` for a ServiceAccount of NS: true for "yes", false for "no". */
  async function canI(serviceAccount: string, ...args: string[]): Promise<boolean> {
    const as = `--as=system:serviceaccount:${NS}:${serviceAccount}`;
    try {
      await kubectl('auth', 'can-i', as, '-n', NS, ...args);
      return true;
    } catch (err) {
      const failed = err as { code?: number; stdout?: string };
      if (failed.code === 1 && failed.stdout?.trim() === 'no') return false;
      throw err;
    }
  }

  const create = (body: unknown) =>
    custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, body }) as Promise<Command>;
  const read = (name: string) =>
    custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name }) as Promise<
      Command & { status?: FfmpegCommandStatus; metadata: { labels?: Record<string, string> } }
    >;
  const patch = (name: string, body: unknown) =>
    custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name, body }, mergePatch);
  const patchStatus = (name: string, body: unknown) =>
    custom.patchNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name, body }, mergePatch);

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ffop-crd-test-'));
    const controlPlane = join(stateDir, 'kcp');
    await run(join(CONTROL_PLANE, 'start.sh'), [controlPlane], {
      env: { ...process.env, FFOP_KCP_OWNER_PID: String(process.pid) },
    });
    cluster = await readClusterEnv(join(controlPlane, 'env'));
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    custom = kc.makeApiClient(CustomObjectsApi);
    core = kc.makeApiClient(CoreV1Api);

    const crd = loadYaml<V1CustomResourceDefinition & KubernetesObject>(await readFile(join(ROOT, 'crds', 'ffmpegcommand.yaml'), 'utf8'));
    await KubernetesObjectApi.makeApiClient(kc).create(crd);
    const extensions = kc.makeApiClient(ApiextensionsV1Api);
    await waitFor('the CRD to be Established', async () => {
      const current = await extensions.readCustomResourceDefinition({ name: CRD_NAME });
      return current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
    });
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });

  after(async () => {
    if (!stateDir) return;
    await run(join(CONTROL_PLANE, 'stop.sh'), [join(stateDir, 'kcp')]).catch(() => {});
    await rm(stateDir, { recursive: true, force: true });
  });

  test('a valid FfmpegCommand is stored as submitted, unknown spec fields pruned', async () => {
    const command = validCommand();
    const extra = { ...command, spec: { ...command.spec, notInSchema: 'smuggled' } };
    await create(extra);
    const stored = await read(command.metadata.name);
    assert.deepEqual(stored.spec, command.spec);
  });

  describe('the schema rejects malformed commands', () => {
    const cases: { what: string; change: (spec: Record<string, unknown>) => void; field: string; text: string }[] = [
      { what: 'missing commandId', change: (s) => delete s.commandId, field: 'spec.commandId', text: 'Required value' },
      { what: 'commandId not a UUID', change: (s) => (s.commandId = 'not-a-uuid'), field: 'spec.commandId', text: 'must be of type uuid' },
      { what: 'vcpuCount 0', change: (s) => (s.vcpuCount = 0), field: 'spec.vcpuCount', text: 'should be greater than or equal to 1' },
      { what: 'vcpuCount 1.5', change: (s) => (s.vcpuCount = 1.5), field: 'spec.vcpuCount', text: 'must be of type int' },
      {
        what: 'maxCommandRunSeconds 0',
        change: (s) => (s.maxCommandRunSeconds = 0),
        field: 'spec.maxCommandRunSeconds',
        text: 'should be greater than 0',
      },
      {
        what: 'unknown commandType',
        change: (s) => (s.commandType = 'SHELL'),
        field: 'spec.commandType',
        text: 'Unsupported value: "SHELL"',
      },
      { what: 'steps 11', change: (s) => (s.steps = 11), field: 'spec.steps', text: 'should be less than or equal to 10' },
      { what: 'steps 0', change: (s) => (s.steps = 0), field: 'spec.steps', text: 'should be greater than or equal to 1' },
      { what: 'request not an object', change: (s) => (s.request = 'ffmpeg -i x'), field: 'spec.request', text: 'must be of type object' },
    ];
    for (const c of cases) {
      test(c.what, async () => {
        const command = validCommand();
        c.change(command.spec as unknown as Record<string, unknown>);
        const { code, causes } = await rejection(() => create(command));
        assert.equal(code, 422);
        assertCause(causes, c.field, c.text);
      });
    }
  });

  test('spec is immutable after creation; metadata is not', async () => {
    const command = validCommand();
    await create(command);
    const name = command.metadata.name;

    for (const spec of [{ vcpuCount: 3 }, { isPrivate: true }, { request: { ffmpeg_commands: ['-i {{in_1}} -f null -'] } }]) {
      const { code, causes } = await rejection(() => patch(name, { spec }));
      assert.equal(code, 422, JSON.stringify(spec));
      assertCause(causes, 'spec', 'spec is immutable');
    }
    await patch(name, { metadata: { labels: { team: 'video' } } });
    const stored = await read(name);
    assert.equal(stored.metadata.labels?.team, 'video');
    assert.deepEqual(stored.spec, command.spec);
  });

  test('status is written only through the status subresource', async () => {
    const command = validCommand();
    await create({ ...command, status: { phase: 'SUCCESS' } });
    const name = command.metadata.name;
    assert.equal((await read(name)).status, undefined, 'status given on create is dropped');

    const status: FfmpegCommandStatus = {
      phase: 'PROCESSING',
      stage: 'UPLOADING',
      currentStep: 1,
      jobNames: ['job-a'],
      queuedAt: '2025-01-02T03:04:05Z',
      durationSeconds: 1.25,
      progress: { percent: 42.5, outTimeSeconds: 8.5, speed: 1.02 },
      outputs: [{ alias: 'out_1', fileId: randomUUID(), fileName: 'b.mp4', sizeBytes: 1234, storageKey: 'k/b.mp4' }],
      observedGeneration: 1,
    };
    await patchStatus(name, { status });
    assert.deepEqual((await read(name)).status, status);
    // The operator's merge patch removes what is null: a percent no longer known, then the whole progress.
    await patchStatus(name, { status: { progress: { percent: null, outTimeSeconds: 1, speed: null } } });
    assert.deepEqual((await read(name)).status?.progress, { outTimeSeconds: 1 });
    await patchStatus(name, { status: { progress: null } });
    assert.equal((await read(name)).status?.progress, undefined);

    // A main-resource write carries no status; a status write carries no spec.
    await patch(name, { metadata: { labels: { seen: 'yes' } }, status: { phase: 'FAILED' } });
    await patchStatus(name, { spec: { vcpuCount: 7 }, status: { stage: '' } });
    const stored = await read(name);
    assert.equal(stored.metadata.labels?.seen, 'yes');
    assert.equal(stored.status?.phase, 'PROCESSING');
    assert.equal(stored.status?.stage, '');
    assert.equal(stored.spec.vcpuCount, 2);

    const bad = await rejection(() =>
      patchStatus(name, { status: { phase: 'DONE', finishedAt: 'yesterday', progress: { percent: 150, outTimeSeconds: 'x' } } }),
    );
    assert.equal(bad.code, 422);
    assertCause(bad.causes, 'status.phase', 'Unsupported value: "DONE"');
    assertCause(bad.causes, 'status.finishedAt', 'must be of type date-time');
    assertCause(bad.causes, 'status.progress.percent', 'should be less than or equal to 100');
    assertCause(bad.causes, 'status.progress.outTimeSeconds', 'must be of type number');
  });

  test('kubectl get shows Status, Stage, vCPUs, Duration and Age (Step and Progress with -o wide)', async () => {
    const command = validCommand();
    await create(command);
    const name = command.metadata.name;
    await patchStatus(name, {
      status: {
        phase: 'PROCESSING',
        stage: 'FFMPEG_PROCESSING',
        currentStep: 1,
        durationSeconds: 12.5,
        progress: { percent: 37.5, outTimeSeconds: 7.5, speed: 1 },
      },
    });

    for (const resource of [PLURAL, SHORT_NAME]) {
      const { stdout } = await kubectl('get', resource, name, '-n', NS);
      const lines = stdout.trimEnd().split('\n');
      assert.deepEqual(lines[0].split(/\s+/), ['NAME', 'STATUS', 'STAGE', 'VCPUS', 'DURATION', 'AGE'], resource);
      const [row] = parseTable(stdout);
      assert.equal(row.NAME, name);
      assert.equal(row.STATUS, 'PROCESSING');
      assert.equal(row.STAGE, 'FFMPEG_PROCESSING');
      assert.equal(row.VCPUS, '2');
      assert.equal(row.DURATION, '12.5');
      assert.match(row.AGE, /^\d+[smhd]/);
    }

    const wide = parseTable((await kubectl('get', SHORT_NAME, name, '-n', NS, '-o', 'wide')).stdout);
    assert.equal(wide[0].STEP, '1');
    assert.equal(wide[0].PROGRESS, '37.5');

    // The `ffmpeg` category lists commands too.
    const byCategory = parseTable((await kubectl('get', 'ffmpeg', '-n', NS)).stdout);
    assert.ok(byCategory.some((row) => row.NAME === name));
  });

  test('rbac.yaml applies, and each ServiceAccount may do exactly its part', async () => {
    await kubectl('apply', '-f', join(ROOT, 'operator', 'manifests', 'rbac.yaml'));
    const runner = await core.readNamespacedServiceAccount({ name: SERVICE_ACCOUNTS.runner, namespace: NS });
    assert.equal(runner.automountServiceAccountToken, false);

    const { operator, api } = SERVICE_ACCOUNTS;
    const commands = `${PLURAL}.${GROUP}`;
    // RBAC reaches the authorizer through its informers: wait until the bindings are seen.
    await waitFor('the operator binding', async () => ((await canI(operator, 'create', 'jobs.batch')) ? true : undefined));
    await waitFor('the api binding', async () => ((await canI(api, 'create', commands)) ? true : undefined));

    const expectations: [string, string[], boolean][] = [
      [operator, ['create', 'jobs.batch'], true],
      [operator, ['patch', 'jobs.batch'], true],
      [operator, ['delete', 'jobs.batch'], true],
      [operator, ['watch', commands], true],
      [operator, ['create', commands], true],
      [operator, ['patch', commands, '--subresource=status'], true],
      [operator, ['update', commands, '--subresource=status'], true],
      [operator, ['get', 'pods'], true],
      [operator, ['create', 'events'], true],
      [operator, ['update', 'leases.coordination.k8s.io'], true],
      [operator, ['get', 'secrets'], false],
      [operator, ['list', 'secrets'], false],
      [operator, ['get', 'pods', '--subresource=log'], false],
      [operator, ['create', 'pods'], false],
      [operator, ['delete', commands], false],
      [operator, ['update', commands], false],
      [operator, ['create', 'jobs.batch', '-n', 'default'], false],
      [api, ['create', commands], true],
      [api, ['get', commands], true],
      [api, ['list', commands], false],
      [api, ['patch', commands, '--subresource=status'], false],
      [api, ['create', 'jobs.batch'], false],
      [api, ['get', 'secrets'], false],
    ];
    for (const verb of ['get', 'list', 'create', 'patch', 'delete']) {
      for (const resource of [commands, 'jobs.batch', 'pods', 'secrets', 'configmaps', 'leases.coordination.k8s.io']) {
        expectations.push([SERVICE_ACCOUNTS.runner, [verb, resource], false]);
      }
    }
    for (const [who, args, allowed] of expectations) {
      assert.equal(await canI(who, ...args), allowed, `${who} ${args.join(' ')}`);
    }
  });
});
