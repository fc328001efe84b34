// The FfmpegCommand CRD and the RBAC manifest against a real kube-apiserver (e2e/control-plane):
// schema and CEL validation of the v1beta1 spec, immutable spec, status subresource, printer columns,
// the upgrade from the previous release's v1alpha1 CRD with an object it made, and least privilege.
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
import { GROUP, KIND, PLURAL, SERVICE_ACCOUNTS, SHORT_NAME } from '../core/k8s/names.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const CONTROL_PLANE = join(ROOT, 'e2e', 'control-plane');
// The namespace rbac.yaml is written for.
const NS = 'ffmpeg-operator';
const CRD_NAME = `${PLURAL}.${GROUP}`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** The CRD as the previous release (chart 0.1.0) installed it. */
const PREVIOUS_CRD = join(CONTROL_PLANE, 'fixtures', 'ffmpegcommand-crd-v1alpha1.yaml');

/** A status as the previous release's operator wrote it. */
const LEGACY_STATUS = {
  phase: 'PROCESSING',
  stage: 'UPLOADING',
  currentStep: 2,
  jobNames: ['job-a', 'job-b'],
  queuedAt: '2025-01-02T03:04:05Z',
  startedAt: '2025-01-02T03:04:06Z',
  durationSeconds: 1.25,
  progress: { percent: 42.5, outTimeSeconds: 8.5, speed: 1.02 },
  outputs: [{ alias: 'out_1', fileId: '7d0c4f2e-5a8b-4c1d-9e3f-0a1b2c3d4e5f', fileName: 'b.mp4', sizeBytes: 1234, storageKey: 'k/b.mp4' }],
  observedGeneration: 1,
};

/** Every status field of this release, as the operator writes them. */
const FULL_STATUS = {
  commandId: '0b4a7c8e-2f1d-4e6a-8b9c-1d2e3f4a5b6c',
  phase: 'SUCCESS',
  stage: 'UPLOADING',
  currentStep: 2,
  jobNames: ['job-a', 'job-b'],
  queuedAt: '2026-01-02T03:04:05Z',
  startedAt: '2026-01-02T03:04:06Z',
  finishedAt: '2026-01-02T03:05:00Z',
  durationSeconds: 55,
  errorStatus: '',
  errorMessage: '',
  progress: { percent: 42.5, outTimeSeconds: 8.5, speed: 1.02 },
  outputs: [
    {
      alias: 'out_small',
      fileId: '7d0c4f2e-5a8b-4c1d-9e3f-0a1b2c3d4e5f',
      fileName: 'small.mp4',
      sizeBytes: 5_000_000_000,
      storageKey: 'acct-1/main/7d0c4f2e/small.mp4',
      storageUrl: 'https://ffmpeg.example.com/v1/storage/acct-1/main/7d0c4f2e/small.mp4?sig=x',
      sizeMbytes: 4768.37,
      fileCount: 1,
      isPrivate: true,
      fileType: 'video',
      fileFormat: 'mp4',
      codec: 'h264',
      mimeType: 'video/mp4',
      duration: 10.04,
      width: 320,
      height: 180,
      frameRate: 29.97,
      pixelFormat: 'yuv420p',
      bitrateVideoKb: 512.5,
      bitrateAudioKb: 128,
    },
  ],
  conditions: [
    {
      type: 'Accepted',
      status: 'True',
      reason: 'Queued',
      message: 'taken in as a command',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-02T03:04:05Z',
    },
    {
      type: 'Running',
      status: 'False',
      reason: 'Succeeded',
      message: '',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-02T03:05:00Z',
    },
    {
      type: 'Succeeded',
      status: 'True',
      reason: 'Succeeded',
      message: 'step 2 of 2',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-02T03:05:00Z',
    },
    {
      type: 'Failed',
      status: 'False',
      reason: 'Succeeded',
      message: '',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-02T03:05:00Z',
    },
  ],
  observedGeneration: 1,
};

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

// Both served versions, spelled out: the tests pin each version's own shape, whichever one core/k8s/names.ts
// names as the one the code writes.
const V1BETA1 = 'v1beta1';
const V1ALPHA1 = 'v1alpha1';
type Version = typeof V1BETA1 | typeof V1ALPHA1;

/** A v1beta1 spec as a person writes it (the HTTP body of run-ffmpeg-command, camelCased). */
type Spec = Record<string, unknown>;
type Status = Record<string, unknown>;
interface Command {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; uid?: string };
  spec: Spec;
  status?: Status;
}

function command(spec: Spec, name = randomUUID()): Command {
  return { apiVersion: `${GROUP}/${V1BETA1}`, kind: KIND, metadata: { name, namespace: NS }, spec };
}
const single = (): Spec => ({
  command: '-i {{in_1}} -vf scale=-2:720 -c:a copy {{out_1}}',
  inputFiles: { in_1: 'https://example.com/trailer.mov' },
  outputFiles: { out_1: 'trailer-720p.mp4' },
  vcpuCount: 2,
  maxCommandRunSeconds: 600,
});
const chain = (): Spec => ({
  commands: ['-i {{in_1}} -t 10 -c copy {{out_cut}}', '-i {{out_cut}} -vf scale=320:-2 {{out_small}}'],
  inputFiles: { in_1: 'https://example.com/a.mp4' },
  outputFiles: { out_cut: 'cut.mp4', out_small: 'small.mp4' },
  metadata: { n: 1, ok: true, s: 'x', f: 1.5 },
  isPrivate: true,
});

/** A v1alpha1 object as the previous release's API made it (its internal spec). */
function legacyCommand(name = randomUUID()): Command {
  return {
    apiVersion: `${GROUP}/${V1ALPHA1}`,
    kind: KIND,
    metadata: { name, namespace: NS, labels: { 'ffmpeg-operator.dev/command-id': name, 'ffmpeg-operator.dev/account': 'acct-1' } },
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
      },
    },
  };
}

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
  /** Made through the previous release's CRD, before the upgrade to this one. */
  let legacy: Command;

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

  const at = (version: Version) => ({ group: GROUP, version, namespace: NS, plural: PLURAL });
  const create = (body: Command, version: Version = V1BETA1) =>
    custom.createNamespacedCustomObject({ ...at(version), body }) as Promise<Command>;
  const read = (name: string, version: Version = V1BETA1) => custom.getNamespacedCustomObject({ ...at(version), name }) as Promise<Command>;
  const patch = (name: string, body: unknown, version: Version = V1BETA1) =>
    custom.patchNamespacedCustomObject({ ...at(version), name, body }, mergePatch) as Promise<Command>;
  const patchStatus = (name: string, body: unknown, version: Version = V1BETA1) =>
    custom.patchNamespacedCustomObjectStatus({ ...at(version), name, body }, mergePatch) as Promise<Command>;

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
    const extensions = kc.makeApiClient(ApiextensionsV1Api);
    const established = (versions: string[]) =>
      waitFor(`the CRD to be Established with ${versions.join(', ')}`, async () => {
        const current = await extensions.readCustomResourceDefinition({ name: CRD_NAME });
        const ok = current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
        const served = current.spec.versions.filter((v) => v.served).map((v) => v.name);
        return ok && versions.every((v) => served.includes(v)) ? true : undefined;
      });

    // The previous release: its CRD, as Helm installed it, and an object its API made, with a status
    // its operator wrote.
    const previous = loadYaml<V1CustomResourceDefinition & KubernetesObject>(await readFile(PREVIOUS_CRD, 'utf8'));
    await KubernetesObjectApi.makeApiClient(kc).create(previous);
    await established([V1ALPHA1]);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    legacy = legacyCommand();
    await waitFor('v1alpha1 to be served', () => create(legacy, V1ALPHA1));
    await patchStatus(legacy.metadata.name, { status: LEGACY_STATUS }, V1ALPHA1);

    // The upgrade, as charts/ffmpeg-operator/README.md documents it for a manual apply (the chart's
    // hook does the same with operator/apply-crd.ts; operator/apply-crd.test.ts tests that one).
    await kubectl('apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'crds', 'ffmpegcommand.yaml'));
    await established([V1BETA1, V1ALPHA1]);
    await waitFor('v1beta1 to be served', () => read(legacy.metadata.name, V1BETA1));
    // kubectl cached discovery from before the upgrade (v1alpha1 preferred, its columns): start afresh.
    await rm(join(stateDir, 'kubectl-cache'), { recursive: true, force: true });
  });

  after(async () => {
    if (!stateDir) return;
    await run(join(CONTROL_PLANE, 'stop.sh'), [join(stateDir, 'kcp')]).catch(() => {});
    await rm(stateDir, { recursive: true, force: true });
  });

  test('the CRD: v1beta1 stored, v1alpha1 served but deprecated, no conversion webhook', async () => {
    const crd = loadYaml<V1CustomResourceDefinition>(await readFile(join(ROOT, 'crds', 'ffmpegcommand.yaml'), 'utf8'));
    assert.equal(crd.spec.conversion?.strategy, 'None');
    assert.deepEqual(
      crd.spec.versions.map((v) => [v.name, v.served, v.storage, v.deprecated ?? false]),
      [
        [V1BETA1, true, true, false],
        [V1ALPHA1, true, false, true],
      ],
    );
    // One status schema for both: the operator writes it through v1beta1 to objects of either.
    assert.deepEqual(
      crd.spec.versions[0].schema!.openAPIV3Schema!.properties!.status,
      crd.spec.versions[1].schema!.openAPIV3Schema!.properties!.status,
    );
    const { stderr } = await kubectl('get', `${PLURAL}.${V1ALPHA1}.${GROUP}`, '-n', NS);
    assert.match(stderr, /Warning: ffmpeg-operator\.dev\/v1alpha1 FfmpegCommand is deprecated; use ffmpeg-operator\.dev\/v1beta1/);
  });

  test('a single command and a chain, as a person writes them, are stored as submitted; unknown spec fields pruned', async () => {
    for (const spec of [single(), chain(), { ...single(), inputFiles: undefined, inputCompressedFolder: 'https://example.com/in.zip' }]) {
      const c = command(JSON.parse(JSON.stringify(spec)) as Spec);
      await create({ ...c, spec: { ...c.spec, accountId: 'smuggled', notInSchema: 1 } });
      assert.deepEqual((await read(c.metadata.name)).spec, c.spec);
    }
    const folder = command({
      command: '-i {{in_1}} -f hls {{out_folder}}/index.m3u8',
      inputFiles: { in_1: 'https://e.com/a' },
      outputFolder: true,
    });
    await create(folder);
    assert.deepEqual((await read(folder.metadata.name)).spec, folder.spec);
  });

  describe('the schema and its CEL rules refuse what a spec gets wrong, each with its message', () => {
    const long = 'x'.repeat(20_001);
    const cases: { what: string; spec: Spec; field: string; text: string }[] = [
      {
        what: 'both command and commands',
        spec: { ...single(), commands: ['-i {{in_1}} {{out_1}}'] },
        field: 'spec',
        text: 'give exactly one of command (one ffmpeg command line) and commands (a chain)',
      },
      {
        what: 'neither command nor commands',
        spec: { ...single(), command: undefined },
        field: 'spec',
        text: 'give exactly one of command (one ffmpeg command line) and commands (a chain)',
      },
      {
        what: 'both outputFiles and outputFolder',
        spec: { ...single(), outputFolder: true },
        field: 'spec',
        text: 'give exactly one of outputFiles and outputFolder',
      },
      {
        what: 'neither outputFiles nor outputFolder',
        spec: { ...single(), outputFiles: undefined },
        field: 'spec',
        text: 'give exactly one of outputFiles and outputFolder',
      },
      {
        what: 'outputFolder with commands',
        spec: { ...chain(), outputFiles: undefined, outputFolder: true },
        field: 'spec',
        text: 'outputFolder is only available with command, not with a chain (commands)',
      },
      {
        what: 'outputFolder: false',
        spec: { ...single(), outputFiles: undefined, outputFolder: false },
        field: 'spec.outputFolder',
        text: 'outputFolder can only be true; leave it out and give outputFiles instead',
      },
      {
        what: 'inputCompressedFolder with commands',
        spec: { ...chain(), inputFiles: undefined, inputCompressedFolder: 'https://e.com/a.zip' },
        field: 'spec',
        text: 'inputCompressedFolder is only available with command, not with a chain (commands)',
      },
      {
        what: 'inputCompressedFolder with inputFiles',
        spec: { ...single(), inputCompressedFolder: 'https://e.com/a.zip' },
        field: 'spec',
        text: 'give either inputFiles or inputCompressedFolder, not both',
      },
      {
        what: 'an input key without in_',
        spec: { ...single(), inputFiles: { in_1: 'https://e.com/a', input: 'https://e.com/b' } },
        field: 'spec.inputFiles',
        text: "inputFiles keys must start with 'in_' and contain only letters, digits and underscores",
      },
      {
        what: 'an input key with a dash',
        spec: { ...single(), inputFiles: { 'in_a-b': 'https://e.com/a' } },
        field: 'spec.inputFiles',
        text: "inputFiles keys must start with 'in_'",
      },
      {
        what: 'an output key without out_',
        spec: { ...single(), outputFiles: { out_1: 'a.mp4', result: 'b.mp4' } },
        field: 'spec.outputFiles',
        text: "outputFiles keys must start with 'out_' and contain only letters, digits and underscores",
      },
      { what: 'a command line too long', spec: { ...single(), command: long }, field: 'spec.command', text: 'Too long' },
      {
        what: 'a chain step too long',
        spec: { ...chain(), commands: ['-i {{in_1}} {{out_cut}}', long] },
        field: 'spec.commands[1]',
        text: 'Too long',
      },
      { what: 'an empty command line', spec: { ...single(), command: '' }, field: 'spec.command', text: 'should be at least 1 chars long' },
      {
        what: 'a chain of 11',
        spec: { ...chain(), commands: Array(11).fill('-i {{in_1}} {{out_cut}}') },
        field: 'spec.commands',
        text: 'Too many: 11: must have at most 10 items',
      },
      { what: 'an empty chain', spec: { ...chain(), commands: [] }, field: 'spec.commands', text: 'should have at least 1 items' },
      {
        what: 'an input URL too long',
        spec: { ...single(), inputFiles: { in_1: `https://e.com/${'a'.repeat(4090)}` } },
        field: 'spec.inputFiles.in_1',
        text: 'Too long',
      },
      {
        what: '21 inputs',
        spec: { ...single(), inputFiles: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`in_${i}`, 'https://e.com/a'])) },
        field: 'spec.inputFiles',
        text: 'Too many: 21: must have at most 20 items',
      },
      {
        what: 'no outputs in outputFiles',
        spec: { ...single(), outputFiles: {} },
        field: 'spec.outputFiles',
        text: 'should have at least 1 properties',
      },
      {
        what: '11 metadata pairs',
        spec: { ...single(), metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) },
        field: 'spec.metadata',
        text: 'Too many: 11: must have at most 10 items',
      },
      { what: 'vcpuCount 0', spec: { ...single(), vcpuCount: 0 }, field: 'spec.vcpuCount', text: 'should be greater than or equal to 1' },
      { what: 'vcpuCount 1.5', spec: { ...single(), vcpuCount: 1.5 }, field: 'spec.vcpuCount', text: 'must be of type int' },
      {
        what: 'maxCommandRunSeconds 0',
        spec: { ...single(), maxCommandRunSeconds: 0 },
        field: 'spec.maxCommandRunSeconds',
        text: 'should be greater than 0',
      },
      {
        what: 'isPrivate not a boolean',
        spec: { ...single(), isPrivate: 'yes' },
        field: 'spec.isPrivate',
        text: 'must be of type boolean',
      },
    ];
    for (const c of cases) {
      test(c.what, async () => {
        const { code, causes } = await rejection(() => create(command(JSON.parse(JSON.stringify(c.spec)) as Spec)));
        assert.equal(code, 422);
        assertCause(causes, c.field, c.text);
      });
    }
    test('no spec at all', async () => {
      const { code, causes } = await rejection(() => create({ ...command({}), spec: undefined as unknown as Spec }));
      assert.equal(code, 422);
      assertCause(causes, 'spec', 'Required value');
    });
  });

  test('spec is immutable after creation; metadata is not', async () => {
    const c = command(single());
    await create(c);
    const name = c.metadata.name;
    for (const spec of [{ vcpuCount: 3 }, { isPrivate: true }, { command: '-i {{in_1}} -f null -' }, { metadata: { a: 'b' } }]) {
      const { code, causes } = await rejection(() => patch(name, { spec }));
      assert.equal(code, 422, JSON.stringify(spec));
      assertCause(causes, 'spec', 'spec is immutable');
    }
    await patch(name, { metadata: { labels: { team: 'video' } } });
    const stored = await read(name);
    assert.equal(stored.metadata.labels?.team, 'video');
    assert.deepEqual(stored.spec, c.spec);
  });

  test('status is written only through the status subresource, and keeps every field (nothing pruned)', async () => {
    const c = command(chain());
    await create({ ...c, status: { phase: 'SUCCESS' } });
    const name = c.metadata.name;
    assert.equal((await read(name)).status, undefined, 'status given on create is dropped');

    await patchStatus(name, { status: FULL_STATUS });
    assert.deepEqual((await read(name)).status, FULL_STATUS);
    // The operator's merge patch removes what is null: a percent no longer known, then the whole progress.
    await patchStatus(name, { status: { progress: { percent: null, outTimeSeconds: 1, speed: null } } });
    assert.deepEqual((await read(name)).status?.progress, { outTimeSeconds: 1 });
    await patchStatus(name, { status: { progress: null } });
    assert.equal((await read(name)).status?.progress, undefined);
    // Null members of an output (a poll record's width of an audio file) are dropped, not refused.
    const [output] = FULL_STATUS.outputs;
    await patchStatus(name, { status: { outputs: [{ ...output, width: null, height: null, codec: null }] } });
    const { width: _w, height: _h, codec: _c, ...withoutNulls } = output;
    assert.deepEqual((await read(name)).status?.outputs, [withoutNulls]);

    // A main-resource write carries no status; a status write carries no spec.
    await patch(name, { metadata: { labels: { seen: 'yes' } }, status: { phase: 'FAILED' } });
    await patchStatus(name, { spec: { vcpuCount: 7 }, status: { stage: '' } });
    const stored = await read(name);
    assert.equal(stored.metadata.labels?.seen, 'yes');
    assert.equal(stored.status?.phase, 'SUCCESS');
    assert.equal(stored.status?.stage, '');
    assert.deepEqual(stored.spec, c.spec);

    const bad = await rejection(() =>
      patchStatus(name, { status: { phase: 'DONE', finishedAt: 'yesterday', progress: { percent: 150, outTimeSeconds: 'x' } } }),
    );
    assert.equal(bad.code, 422);
    assertCause(bad.causes, 'status.phase', 'Unsupported value: "DONE"');
    assertCause(bad.causes, 'status.finishedAt', 'must be of type date-time');
    assertCause(bad.causes, 'status.progress.percent', 'should be less than or equal to 100');
    assertCause(bad.causes, 'status.progress.outTimeSeconds', 'must be of type number');
  });

  test('conditions have the standard shape: one per type, status True|False|Unknown, a CamelCase reason', async () => {
    const c = command(single());
    await create(c);
    const name = c.metadata.name;
    const condition = {
      type: 'Accepted',
      status: 'False',
      reason: 'NamespaceNotBound',
      message: 'm',
      lastTransitionTime: '2026-01-02T03:04:05Z',
    };
    const cases: [unknown[], string, string][] = [
      [[condition, { ...condition, status: 'True' }], 'status.conditions[1]', 'Duplicate value'],
      [[{ ...condition, status: 'Yes' }], 'status.conditions[0].status', 'Unsupported value: "Yes"'],
      [[{ ...condition, reason: 'not bound' }], 'status.conditions[0].reason', 'should match'],
      [[{ ...condition, reason: undefined }], 'status.conditions[0].reason', 'Required value'],
      [[{ ...condition, lastTransitionTime: undefined }], 'status.conditions[0].lastTransitionTime', 'Required value'],
    ];
    for (const [conditions, field, text] of cases) {
      const { code, causes } = await rejection(() => patchStatus(name, { status: { conditions: JSON.parse(JSON.stringify(conditions)) } }));
      assert.equal(code, 422, field);
      assertCause(causes, field, text);
    }
  });

  test('kubectl get shows Status, Stage, vCPUs, Duration and Age (Step, Progress and Command ID with -o wide)', async () => {
    const c = command(single());
    const created = await create(c);
    const name = c.metadata.name;
    await patchStatus(name, {
      status: {
        commandId: created.metadata.uid,
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

    const wideOut = (await kubectl('get', SHORT_NAME, name, '-n', NS, '-o', 'wide')).stdout;
    // "COMMAND ID" is two words: cut the header by its column starts.
    const header = wideOut.split('\n')[0];
    assert.match(header, /^NAME\s+STATUS\s+STAGE\s+STEP\s+PROGRESS\s+VCPUS\s+DURATION\s+COMMAND ID\s+AGE$/);
    const wide = parseTable(wideOut.replace('COMMAND ID', 'COMMAND_ID'));
    assert.equal(wide[0].STEP, '1');
    assert.equal(wide[0].PROGRESS, '37.5');
    assert.equal(wide[0].COMMAND_ID, created.metadata.uid);

    // The `ffmpeg` category lists commands too.
    const byCategory = parseTable((await kubectl('get', 'ffmpeg', '-n', NS)).stdout);
    assert.ok(byCategory.some((row) => row.NAME === name));
  });

  test("an object the previous release made (v1alpha1) is read as v1beta1 and takes the upgraded operator's status patches", async () => {
    const name = legacy.metadata.name;
    // Read as v1beta1: the apiVersion is rewritten, its v1alpha1-only spec fields are pruned (not in the
    // v1beta1 schema), the status the old operator wrote is all there. Labels carry the command id and account.
    const asBeta = await read(name, V1BETA1);
    assert.equal(asBeta.apiVersion, `${GROUP}/${V1BETA1}`);
    assert.deepEqual(asBeta.spec, { vcpuCount: 2, maxCommandRunSeconds: 0.5, isPrivate: false });
    assert.deepEqual(asBeta.status, LEGACY_STATUS);
    assert.deepEqual(asBeta.metadata.labels, legacy.metadata.labels);

    // What the upgraded operator writes: a merge patch through /status of v1beta1, with conditions and
    // the outputs' new fields. Its spec meets none of v1beta1's rules; ratcheting lets status through.
    const patchBody = {
      status: {
        commandId: name,
        phase: 'SUCCESS',
        stage: '',
        finishedAt: '2026-01-02T03:05:00Z',
        outputs: FULL_STATUS.outputs,
        conditions: FULL_STATUS.conditions,
        observedGeneration: 1,
      },
    };
    await patchStatus(name, patchBody, V1BETA1);
    const expected = { ...LEGACY_STATUS, ...patchBody.status };
    assert.deepEqual((await read(name, V1BETA1)).status, expected);
    // Still readable as v1alpha1 (the previous release's clients), with the same status.
    const asAlpha = await read(name, V1ALPHA1);
    assert.equal(asAlpha.apiVersion, `${GROUP}/${V1ALPHA1}`);
    assert.deepEqual(asAlpha.status, expected);
    // Its spec may be filled in once with a whole v1beta1 spec (the upgraded operator writes the stored
    // command's), and is immutable from then on, whatever version asks (through v1alpha1 the spec also
    // misses that version's required fields, which refuses it first).
    const half = await rejection(() => patch(name, { spec: { vcpuCount: 4 } }, V1BETA1));
    assert.equal(half.code, 422);
    assertCause(half.causes, 'spec', 'give exactly one of command');
    const filledIn = {
      commands: ['-i {{in_1}} {{out_1}}', '-i {{out_1}} {{out_2}}'],
      inputFiles: { in_1: 'https://example.com/a.mp4' },
      outputFiles: { out_1: 'b.mp4', out_2: 'c.mp4' },
      vcpuCount: 2,
      maxCommandRunSeconds: 0.5,
      isPrivate: false,
    };
    await patch(name, { spec: filledIn }, V1BETA1);
    assert.deepEqual((await read(name, V1BETA1)).spec, filledIn);
    const beta = await rejection(() => patch(name, { spec: { vcpuCount: 4 } }, V1BETA1));
    assert.equal(beta.code, 422);
    assertCause(beta.causes, 'spec', 'spec is immutable');
    const again = await rejection(() => patch(name, { spec: { ...filledIn, commands: ['-i {{in_1}} {{out_1}}'] } }, V1BETA1));
    assertCause(again.causes, 'spec', 'spec is immutable');
    const alpha = await rejection(() => patch(name, { spec: { vcpuCount: 4 } }, V1ALPHA1));
    assert.equal(alpha.code, 422);
    // The previous release's operator, still running while the upgrade rolls, writes status through
    // v1alpha1: that goes through too.
    await patchStatus(name, { status: { durationSeconds: 60 } }, V1ALPHA1);
    expected.durationSeconds = 60;
    assert.deepEqual((await read(name, V1BETA1)).status, expected);
    // Its metadata is not: the operator's finalizer patch goes through.
    await patch(name, { metadata: { finalizers: ['ffmpeg-operator.dev/test'] } }, V1BETA1);
    await patch(name, { metadata: { finalizers: null } }, V1BETA1);
    assert.deepEqual((await read(name, V1BETA1)).status, expected);
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
      // Namespace labels bind a namespace to an account: read cluster-wide, never written.
      [operator, ['list', 'namespaces'], true],
      [operator, ['watch', 'namespaces'], true],
      [operator, ['patch', 'namespaces'], false],
      // With operator.watchNamespaces empty (rbac.yaml), no commands outside its own namespace.
      [operator, ['get', commands, '-n', 'default'], false],
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
