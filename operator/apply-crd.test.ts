// operator/apply-crd.ts, the chart's pre-upgrade hook program, against a real kube-apiserver
// (e2e/control-plane): it upgrades the previous release's CRD to the chart's as the hook's own
// ServiceAccount (the chart's RBAC for it, rendered by Helm), with the CRD the hook's ConfigMap holds,
// and fails with the API server's reason when it cannot.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  dumpYaml,
  loadAllYaml,
  loadYaml,
  type KubernetesObject,
  type V1ConfigMap,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { applyCrd, FIELD_MANAGER } from './apply-crd.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const CONTROL_PLANE = join(ROOT, 'e2e', 'control-plane');
const CHART = join(ROOT, 'charts', 'ffmpeg-operator');
const CRD_FILE = join(ROOT, 'crds', 'ffmpegcommand.yaml');
const PREVIOUS_CRD = join(CONTROL_PLANE, 'fixtures', 'ffmpegcommand-crd-v1alpha1.yaml');
const CRD_NAME = 'ffmpegcommands.ffmpeg-operator.dev';
const NS = 'ffop-hook';
const RELEASE = 'ffop';
const REQUIRED = [
  'database.url=postgres://unused',
  's3.endpoint=https://unused',
  's3.bucket=unused',
  's3.accessKey=unused',
  's3.secretKey=unused',
].flatMap((v) => ['--set', v]);

type Crd = V1CustomResourceDefinition & KubernetesObject;

describe('apply-crd: the chart pre-upgrade hook program', () => {
  let stateDir = '';
  let kubeconfig = '';
  let admin: KubeConfig;
  /** The hook's ServiceAccount (impersonated), with only the RBAC the chart gives it. */
  let hook: KubeConfig;
  /** The CRD as the hook's ConfigMap holds it. */
  let hookCrdText = '';

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ffop-apply-crd-test-'));
    const built = Object.fromEntries(
      (await run('bash', [join(CONTROL_PLANE, 'build.sh')])).stdout
        .trim()
        .split('\n')
        .map((l) => l.split(/=(.*)/s).slice(0, 2)),
    ) as Record<string, string>;
    const controlPlane = join(stateDir, 'kcp');
    await run(join(CONTROL_PLANE, 'start.sh'), [controlPlane], {
      env: { ...process.env, ...built, FFOP_KCP_OWNER_PID: String(process.pid) },
    });
    kubeconfig = (await run('bash', ['-c', 'set -a; . "$1"; printf "%s" "$KUBECONFIG"', 'read-env', join(controlPlane, 'env')])).stdout;
    admin = new KubeConfig();
    admin.loadFromFile(kubeconfig);
    const objects = KubernetesObjectApi.makeApiClient(admin);

    // The previous release, as `helm install` left it: its CRD, created by Helm.
    await objects.create(loadYaml<Crd>(await readFile(PREVIOUS_CRD, 'utf8')), undefined, undefined, 'helm');
    await objects.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });

    // The hook's objects as the chart renders them; all but the Job (no node runs pods here).
    const helm = join(built.FFOP_HELM_BIN_DIR, 'helm');
    const rendered = (
      await run(helm, ['template', RELEASE, CHART, '-n', NS, '--show-only', 'templates/crd-upgrade-hook.yaml', ...REQUIRED])
    ).stdout;
    const docs = loadAllYaml(rendered).filter(Boolean) as KubernetesObject[];
    for (const doc of docs.filter((d) => d.kind !== 'Job')) await objects.create(doc);
    const configMap = docs.find((d) => d.kind === 'ConfigMap') as V1ConfigMap;
    hookCrdText = configMap.data!['ffmpegcommand.yaml'];
    const serviceAccount = docs.find((d) => d.kind === 'ServiceAccount')!;

    hook = new KubeConfig();
    hook.loadFromOptions({
      clusters: admin.clusters,
      users: [{ ...admin.getCurrentUser()!, impersonateUser: `system:serviceaccount:${NS}:${serviceAccount.metadata!.name}` }],
      contexts: admin.contexts,
      currentContext: admin.currentContext,
    });
    // RBAC reaches the authorizer through its informers: wait until the hook may read the CRD.
    const extensions = hook.makeApiClient(ApiextensionsV1Api);
    const deadline = Date.now() + 60_000;
    while (
      !(await extensions.readCustomResourceDefinition({ name: CRD_NAME }).then(
        () => true,
        () => false,
      ))
    ) {
      if (Date.now() > deadline) throw new Error('the hook ServiceAccount never got to read the CRD');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  after(async () => {
    if (!stateDir) return;
    await run(join(CONTROL_PLANE, 'stop.sh'), [join(stateDir, 'kcp')]).catch(() => {});
    await rm(stateDir, { recursive: true, force: true });
  });

  test('as the hook ServiceAccount: applies the chart CRD over the one Helm installed, and returns once v1beta1 is served', async () => {
    assert.equal(hookCrdText, await readFile(CRD_FILE, 'utf8'), 'the ConfigMap holds the chart CRD');
    const lines: string[] = [];
    await applyCrd(hook, hookCrdText, { log: (line) => lines.push(line) });
    assert.deepEqual(lines, [
      `applied CustomResourceDefinition ${CRD_NAME}`,
      `CustomResourceDefinition ${CRD_NAME} is established; served: ffmpeg-operator.dev/v1beta1, ffmpeg-operator.dev/v1alpha1`,
    ]);

    const crd = await admin.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: CRD_NAME });
    assert.deepEqual(
      crd.spec.versions.map((v) => [v.name, v.served, v.storage]),
      [
        ['v1beta1', true, true],
        ['v1alpha1', true, false],
      ],
    );
    assert.ok(
      crd.metadata!.managedFields!.some((f) => f.manager === FIELD_MANAGER && f.operation === 'Apply'),
      JSON.stringify(crd.metadata!.managedFields!.map((f) => [f.manager, f.operation])),
    );
    // Served now, not eventually: a v1beta1 object is taken at once.
    await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: 'ffmpeg-operator.dev',
      version: 'v1beta1',
      namespace: NS,
      plural: 'ffmpegcommands',
      body: {
        apiVersion: 'ffmpeg-operator.dev/v1beta1',
        kind: 'FfmpegCommand',
        metadata: { name: 'after-the-hook' },
        spec: { command: '-i {{in_1}} {{out_1}}', inputFiles: { in_1: 'https://example.com/a.mp4' }, outputFiles: { out_1: 'b.mp4' } },
      },
    });
    // A second upgrade with the same chart: nothing to change, and it says so the same way.
    await applyCrd(hook, hookCrdText);
  });

  test('the hook ServiceAccount may change no other CustomResourceDefinition: the 403 is the message', async () => {
    const other = await readFile(join(CONTROL_PLANE, 'fixtures', 'servicemonitor-crd-minimal.yaml'), 'utf8');
    await assert.rejects(applyCrd(hook, other), (err: Error) => {
      assert.match(
        err.message,
        /^applying CustomResourceDefinition servicemonitors\.monitoring\.coreos\.com failed: HTTP 403: .*forbidden/,
      );
      assert.match(err.message, new RegExp(`system:serviceaccount:${NS}:`));
      return true;
    });
  });

  test('a CRD the API server refuses: its reason, not a generic error', async () => {
    const crd = loadYaml<Crd>(hookCrdText);
    for (const v of crd.spec.versions) v.storage = true;
    await assert.rejects(applyCrd(admin, dumpYaml(crd)), (err: Error) => {
      assert.match(err.message, new RegExp(`^applying CustomResourceDefinition ${CRD_NAME.replaceAll('.', '\\.')} failed: HTTP 422: `));
      assert.match(err.message, /must have exactly one version marked as storage version/);
      return true;
    });
  });

  test('a CRD that is never Established: times out, saying what it waited for', async () => {
    // Same group and kind as FfmpegCommand under another plural: the API server refuses its names.
    const crd = loadYaml<Crd>(hookCrdText);
    crd.metadata!.name = `clashes.${crd.spec.group}`;
    crd.spec.names = { kind: crd.spec.names.kind, plural: 'clashes', singular: 'clash', listKind: `${crd.spec.names.kind}List` };
    await assert.rejects(applyCrd(admin, dumpYaml(crd), { timeoutMs: 2_000 }), (err: Error) => {
      assert.match(
        err.message,
        /^CustomResourceDefinition clashes\.ffmpeg-operator\.dev: timed out after 2 s waiting for the Established condition \(/,
      );
      return true;
    });
  });

  test('not a CRD: refused before anything is sent', async () => {
    await assert.rejects(
      applyCrd(admin, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n'),
      /no CustomResourceDefinition with a name/,
    );
  });

  test('as a program: exit 0 and what it did; exit 1 and why; exit 2 without a file', async () => {
    const program = (args: string[]) =>
      run(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'apply-crd.ts'), ...args], {
        env: { ...process.env, KUBECONFIG: kubeconfig },
      }).then(
        (r) => ({ code: 0, ...r }),
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
    const file = join(stateDir, 'crd.yaml');
    await writeFile(file, hookCrdText);
    const applied = await program([file]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /^apply-crd: applied CustomResourceDefinition ffmpegcommands\.ffmpeg-operator\.dev$/m);
    assert.match(applied.stdout, /^apply-crd: CustomResourceDefinition ffmpegcommands\.ffmpeg-operator\.dev is established/m);

    const missing = await program([join(stateDir, 'nothing.yaml')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^apply-crd: ENOENT: no such file or directory/m);
    const usage = await program([]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: node apply-crd\.js <crd\.yaml>/);
  });
});
