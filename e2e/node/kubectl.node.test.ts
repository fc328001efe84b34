// FfmpegCommand as a Kubernetes interface, on a real node with the chart installed: what a team does
// with kubectl alone (docs/kubectl.md). A v1beta1 FfmpegCommand applied in a namespace the operator
// watches and an admin bound to an account runs like an API submission of the same body; kubectl get,
// wait, describe and delete work on it; what it may not do ends FAILED with the HTTP API's own texts.
// The second suite upgrades the previous release (v1alpha1 only) with `helm upgrade` while one of its
// commands runs. Run inside e2e/node/sandbox.sh (scripts/test.sh does).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { LABELS } from '../../core/k8s/names.ts';
import { makeClip, startMediaServer, type ApiClient, type MediaServer } from '../harness.ts';
import { parseEnvText, runProcess, type ProcessResult } from '../cluster/cluster.ts';
import { CHART, installOnRealNode, RELEASE, type InstalledService } from './installed-service.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Bound to an account on the pro plan. */
const TEAM = 'media-team';
/** Watched, but bound to no account. */
const UNBOUND = 'unbound-team';
/** Bound to an account on a plan of at most 1 vCPU. */
const SMALL = 'small-team';
const BINDING_LABEL = 'ffmpeg-operator.dev/account';

/** A command line that runs for about `seconds` (read at its real rate) on one vCPU, as in chart.node.test.ts. */
const slowLine = (seconds: number) => `-re -f lavfi -i testsrc=d=${seconds}:s=160x120:r=10 -c:v libx264 -preset ultrafast {{out_1}}`;

interface Status {
  commandId?: string;
  phase?: string;
  stage?: string;
  errorStatus?: string;
  errorMessage?: string;
  outputs?: { alias: string; fileId: string; fileName: string; storageUrl: string; height?: number; sizeBytes: number }[];
  conditions?: { type: string; status: string; reason: string; message: string; observedGeneration?: number; lastTransitionTime: string }[];
}
interface Resource {
  apiVersion: string;
  metadata: { name: string; namespace: string; uid: string; generation: number };
  spec: Record<string, unknown>;
  status?: Status;
}
interface EventItem {
  type: string;
  reason: string;
  message: string;
}

const until = async <T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs = 120_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

const ok = (what: string, result: ProcessResult): string => {
  assert.equal(result.code, 0, `${what}: ${result.stderr}`);
  return result.stdout;
};

/** The first bytes of an MP4: a box whose type is `ftyp`. */
const isMp4 = (bytes: Uint8Array) => Buffer.from(bytes.subarray(4, 8)).toString('latin1') === 'ftyp';

/** kubectl as a team and a platform team use it: YAML files applied, objects read back as JSON. */
function kubectlTools(svc: InstalledService, dir: string) {
  let files = 0;
  const tools = {
    /** `kubectl apply -f <file>` of YAML text. */
    async apply(yaml: string): Promise<ProcessResult> {
      const file = join(dir, `resource-${++files}.yaml`);
      await writeFile(file, yaml);
      return svc.kubectl(['apply', '-f', file]);
    },
    async get(name: string, namespace: string, kind = 'ffc'): Promise<Resource> {
      return JSON.parse(
        ok(`kubectl get ${kind}/${name}`, await svc.kubectl(['get', kind, name, '-n', namespace, '-o', 'json'])),
      ) as Resource;
    },
    /** `kubectl wait` for a phase; returns the resource then. */
    async waitPhase(name: string, namespace: string, phase: string, timeoutSeconds = 180): Promise<Resource> {
      const waited = await svc.kubectl([
        'wait',
        `--for=jsonpath={.status.phase}=${phase}`,
        `ffc/${name}`,
        '-n',
        namespace,
        `--timeout=${timeoutSeconds}s`,
      ]);
      const now = await tools.get(name, namespace).catch(() => null);
      assert.equal(waited.code, 0, `kubectl wait for ${phase}: ${waited.stderr} (status now: ${JSON.stringify(now?.status)})`);
      return now!;
    },
    /** The Events about an object, oldest first. */
    async events(name: string, namespace: string): Promise<EventItem[]> {
      const out = ok(
        'kubectl get events',
        await svc.kubectl(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']),
      );
      return (JSON.parse(out) as { items: EventItem[] }).items;
    },
    /** Names of the Jobs of a command, in every namespace. */
    async jobsOf(commandId: string): Promise<string[]> {
      const out = ok('kubectl get jobs', await svc.kubectl(['get', 'jobs', '-A', '-l', `${LABELS.commandId}=${commandId}`, '-o', 'name']));
      return out.split('\n').filter(Boolean);
    },
    /** The runner container of a command, once running: its containerd id. */
    async runningContainer(commandId: string): Promise<string> {
      return until(`a running runner container for ${commandId}`, async () => {
        const out = await svc.kubectl([
          'get',
          'pods',
          '-n',
          svc.namespace,
          '-l',
          `${LABELS.commandId}=${commandId}`,
          '-o',
          'jsonpath={range .items[*]}{.status.containerStatuses[0].state.running.startedAt} {.status.containerStatuses[0].containerID}{"\\n"}{end}',
        ]);
        const running = out.stdout.split('\n').find((l) => /^\S+ containerd:\/\//.test(l));
        return running?.split(' ')[1].replace(/^containerd:\/\//, '');
      });
    },
  };
  return tools;
}

/** The condition of a type, failing when there is none. */
function condition(status: Status | undefined, type: string) {
  const found = status?.conditions?.find((c) => c.type === type);
  assert.ok(found, `a ${type} condition in ${JSON.stringify(status?.conditions)}`);
  assert.ok(!Number.isNaN(Date.parse(found.lastTransitionTime)), `${type} has a lastTransitionTime`);
  assert.ok(found.reason, `${type} has a reason`);
  return found;
}

describe('FfmpegCommands made with kubectl', () => {
  let svc: InstalledService;
  let media: MediaServer;
  let dir: string;
  let k: ReturnType<typeof kubectlTools>;
  /** The API key of the account media-team is bound to. */
  let teamApi: ApiClient;
  let smallApi: ApiClient;
  let commands: CommandsRepo;

  before(async () => {
    const nodeIp = process.env.FFOP_NODE_IP ?? '127.0.0.1';
    media = await startMediaServer((d) => makeClip(d, 'trailer.mov'), nodeIp);
    dir = await mkdtemp(join(tmpdir(), 'ffop-kubectl-'));
    svc = await installOnRealNode({
      allow: [media.allowEntry],
      namespaces: [TEAM, UNBOUND, SMALL],
      values: { operator: { watchNamespaces: [TEAM, UNBOUND, SMALL] } },
    });
    console.log(`# stage times (s): ${JSON.stringify(svc.timings)}`);
    k = kubectlTools(svc, dir);
    commands = new CommandsRepo(svc.database.db);
    await new PlansRepo(svc.database.db).create({
      name: 'one-vcpu',
      maxVcpus: 1,
      maxCommandRunSeconds: 600,
      requestsPerMinute: 1200,
      storageQuotaBytes: 1e12,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: false,
    });
    // The platform team binds namespaces to accounts, as docs/kubectl.md says.
    const team = await svc.newAccountWithId('pro');
    const small = await svc.newAccountWithId('one-vcpu');
    ok('label media-team', await svc.kubectl(['label', 'namespace', TEAM, `${BINDING_LABEL}=${team.id}`]));
    ok('label small-team', await svc.kubectl(['label', 'namespace', SMALL, `${BINDING_LABEL}=${small.id}`]));
    teamApi = svc.client(team.key);
    smallApi = svc.client(small.key);
  });
  after(async () => {
    await svc?.close();
    await media?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("the issue's YAML runs to SUCCESS: get, wait, describe, outputs, and the HTTP API knows it", async () => {
    const name = 'trailer-720p';
    // Every state `kubectl get ffc --watch` shows, from before the resource exists.
    const watch = spawn(
      svc.cluster.env.KUBECTL,
      [
        `--kubeconfig=${join(svc.cluster.stateDir, 'test.kubeconfig')}`,
        'get',
        'ffc',
        '-n',
        TEAM,
        '--field-selector',
        `metadata.name=${name}`,
        '--watch',
        '--no-headers',
        '-o',
        'custom-columns=PHASE:.status.phase,STAGE:.status.stage,PROGRESS:.status.progress.percent',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let watched = '';
    watch.stdout.on('data', (chunk: Buffer) => (watched += chunk.toString()));
    await new Promise((r) => setTimeout(r, 2000)); // kubectl has listed and is watching
    try {
      const applied = await k.apply(`apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata: { name: ${name}, namespace: ${TEAM} }
spec:
  command: "-i {{in_1}} -vf scale=-2:720 -c:a copy {{out_1}}"
  inputFiles: { in_1: "${media.url}/trailer.mov" }
  outputFiles: { out_1: "trailer-720p.mp4" }
  vcpuCount: 2
  maxCommandRunSeconds: 600
`);
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(applied.stdout, /ffmpegcommand\.ffmpeg-operator\.dev\/trailer-720p created/);
      const done = await k.waitPhase(name, TEAM, 'SUCCESS');
      const status = done.status!;
      assert.equal(status.commandId, done.metadata.uid, 'a kubectl-made command is known by its uid');

      // kubectl get ffc: its phase, and the command id in the wide view.
      assert.match(ok('kubectl get ffc', await svc.kubectl(['get', 'ffc', '-n', TEAM])), new RegExp(`^${name}\\s+SUCCESS\\s`, 'm'));
      assert.match(
        ok('kubectl get ffc -o wide', await svc.kubectl(['get', 'ffc', name, '-n', TEAM, '-o', 'wide'])),
        new RegExp(status.commandId),
      );
      const phases = watched
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((cols) => cols[0]);
      console.log(`# kubectl get ffc --watch: ${JSON.stringify(phases)}`);
      const order = ['QUEUED', 'PROCESSING', 'SUCCESS'].map((p) => phases.findIndex((cols) => cols[0] === p));
      assert.ok(
        order.every((i, n) => i >= 0 && (n === 0 || i > order[n - 1])),
        `QUEUED, then PROCESSING, then SUCCESS: ${JSON.stringify(phases)}`,
      );
      assert.ok(
        phases.some((cols) => cols[0] === 'PROCESSING' && cols[1] !== '<none>'),
        `PROCESSING with its stage: ${JSON.stringify(phases)}`,
      );

      // Its output, as the poll record has it.
      assert.equal(status.outputs?.length, 1, JSON.stringify(status.outputs));
      const [output] = status.outputs;
      assert.equal(output.alias, 'out_1');
      assert.equal(output.fileName, 'trailer-720p.mp4');
      assert.equal(output.height, 720);
      const download = await fetch(output.storageUrl);
      assert.equal(download.status, 200);
      const bytes = new Uint8Array(await download.arrayBuffer());
      assert.equal(bytes.length, output.sizeBytes);
      assert.ok(isMp4(bytes), 'the output is an MP4 file');
      assert.ok(media.requests.includes('/trailer.mov'), 'the runner fetched the input from its URL');

      // Conditions and Events.
      assert.equal(condition(status, 'Accepted').status, 'True');
      const succeeded = condition(status, 'Succeeded');
      assert.equal(succeeded.status, 'True');
      assert.equal(succeeded.observedGeneration, done.metadata.generation);
      const running = status.conditions?.find((c) => c.type === 'Running');
      assert.notEqual(running?.status, 'True', 'no longer Running');
      const described = ok('kubectl describe', await svc.kubectl(['describe', 'ffc', name, '-n', TEAM]));
      const events = described.slice(described.indexOf('Events:'));
      for (const reason of ['Queued', 'Started', 'Succeeded'])
        assert.match(events, new RegExp(`^\\s+Normal\\s+${reason}\\s`, 'm'), described);

      // One kind of thing with API submissions: the bound account polls it and lists it.
      const polled = await teamApi.get(`/v1/commands/${status.commandId}`);
      assert.equal(polled.status, 200, JSON.stringify(polled.body));
      assert.equal(polled.body.status, 'SUCCESS');
      assert.equal(polled.body.output_files.out_1.file_id, output.fileId);
      assert.equal(polled.body.output_files.out_1.storage_url, output.storageUrl);
      const listed = await teamApi.get('/v1/commands');
      assert.equal(listed.status, 200);
      assert.ok(
        (listed.body as { command_id: string }[]).some((c) => c.command_id === status.commandId),
        "the account's list holds it",
      );
      assert.equal((await svc.client().get(`/v1/commands/${status.commandId}`)).status, 404, 'another account does not see it');
    } finally {
      watch.kill();
    }
  });

  test('a chain declared in YAML ends SUCCESS with both outputs', async () => {
    const name = 'trailer-chain';
    const applied = await k.apply(`apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata:
  name: ${name}
  namespace: ${TEAM}
spec:
  commands:
    - "-i {{in_1}} -t 1 -c copy {{out_1}}"
    - "-i {{out_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_2}}"
  inputFiles:
    in_1: "${media.url}/trailer.mov"
  outputFiles:
    out_1: first-second.mp4
    out_2: small.mp4
  vcpuCount: 1
`);
    assert.equal(applied.code, 0, applied.stderr);
    const { status } = await k.waitPhase(name, TEAM, 'SUCCESS');
    const outputs = new Map(status!.outputs!.map((o) => [o.alias, o]));
    assert.deepEqual([...outputs.keys()].sort(), ['out_1', 'out_2']);
    assert.equal(outputs.get('out_2')!.fileName, 'small.mp4');
    for (const output of outputs.values()) {
      const download = await fetch(output.storageUrl);
      assert.equal(download.status, 200);
      assert.ok(isMp4(new Uint8Array(await download.arrayBuffer())), `${output.alias} is an MP4 file`);
    }
    const events = await k.events(name, TEAM);
    assert.ok(
      events.some((e) => e.reason === 'StepSucceeded' && /step 1 of 2/.test(e.message)),
      JSON.stringify(events.map((e) => [e.reason, e.message])),
    );
    assert.equal((await teamApi.get(`/v1/commands/${status!.commandId}`)).body.status, 'SUCCESS');
  });

  test('a resource in a namespace bound to no account is refused and never runs', async () => {
    const name = 'nobody-pays';
    const applied = await k.apply(`apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata: { name: ${name}, namespace: ${UNBOUND} }
spec:
  command: "${slowLine(1)}"
  outputFiles: { out_1: "out.mp4" }
  vcpuCount: 1
`);
    assert.equal(applied.code, 0, applied.stderr);
    const refused = await k.waitPhase(name, UNBOUND, 'FAILED', 60);
    assert.equal(refused.status!.errorStatus, 'NAMESPACE_NOT_BOUND');
    assert.match(refused.status!.errorMessage!, new RegExp(UNBOUND));
    const accepted = condition(refused.status, 'Accepted');
    assert.equal(accepted.status, 'False');
    assert.equal(accepted.reason, 'NamespaceNotBound');
    const events = await k.events(name, UNBOUND);
    assert.ok(
      events.some((e) => e.type === 'Warning' && e.reason === 'Refused'),
      JSON.stringify(events.map((e) => [e.type, e.reason, e.message])),
    );
    // Never taken in: no command row, no Job, now or a little later.
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(await k.jobsOf(refused.metadata.uid), []);
    assert.equal(await commands.findById(refused.metadata.uid), null, 'no command row');
    assert.equal((await k.get(name, UNBOUND)).status!.phase, 'FAILED');
  });

  test("the plan's vCPU cap applies as to an API submission, with the same message", async () => {
    const name = 'too-many-vcpus';
    const applied = await k.apply(`apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata: { name: ${name}, namespace: ${SMALL} }
spec:
  command: "-i {{in_1}} -c copy {{out_1}}"
  inputFiles: { in_1: "${media.url}/trailer.mov" }
  outputFiles: { out_1: "copy.mp4" }
  vcpuCount: 2
`);
    assert.equal(applied.code, 0, applied.stderr);
    const refused = await k.waitPhase(name, SMALL, 'FAILED', 60);
    assert.equal(refused.status!.errorStatus, 'NOT_ALLOWED', JSON.stringify(refused.status));
    const http = await smallApi.post('/v1/run-ffmpeg-command', {
      ffmpeg_command: '-i {{in_1}} -c copy {{out_1}}',
      input_files: { in_1: `${media.url}/trailer.mov` },
      output_files: { out_1: 'copy.mp4' },
      vcpu_count: 2,
    });
    assert.equal(http.status, 403, JSON.stringify(http.body));
    assert.equal(refused.status!.errorMessage, http.body.detail);
    assert.match(refused.status!.errorMessage!, /vcpu_count 2/);
    const events = await k.events(name, SMALL);
    assert.ok(
      events.some((e) => e.type === 'Warning' && e.message.includes(refused.status!.errorMessage!)),
      JSON.stringify(events.map((e) => [e.type, e.reason, e.message])),
    );
    assert.deepEqual(await k.jobsOf(refused.metadata.uid), []);
  });

  test('an invalid spec: the API server refuses what its schema can judge; the rest ends FAILED with the 422 text', async () => {
    // Both command and commands: the CRD's rule refuses it, nothing is stored.
    const both = await k.apply(`apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata: { name: both-forms, namespace: ${TEAM} }
spec:
  command: "-i {{in_1}} {{out_1}}"
  commands: ["-i {{in_1}} {{out_1}}"]
  inputFiles: { in_1: "${media.url}/trailer.mov" }
  outputFiles: { out_1: "o.mp4" }
`);
    assert.notEqual(both.code, 0, 'kubectl apply fails');
    assert.match(both.stderr, /is invalid/);
    assert.match(both.stderr, /\bcommands?\b/, 'the message names the fields');
    assert.match((await svc.kubectl(['get', 'ffc', 'both-forms', '-n', TEAM])).stderr, /NotFound|not found/);

    // {{in_2}} is not declared: only the operator (the HTTP API's own check) can say so.
    const name = 'undeclared-input';
    const applied = await k.apply(`apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata: { name: ${name}, namespace: ${TEAM} }
spec:
  command: "-i {{in_2}} {{out_1}}"
  inputFiles: { in_1: "${media.url}/trailer.mov" }
  outputFiles: { out_1: "o.mp4" }
  vcpuCount: 1
`);
    assert.equal(applied.code, 0, applied.stderr);
    const failed = await k.waitPhase(name, TEAM, 'FAILED', 60);
    assert.equal(failed.status!.errorStatus, 'INVALID_COMMAND', JSON.stringify(failed.status));
    const http = await teamApi.post('/v1/run-ffmpeg-command', {
      ffmpeg_command: '-i {{in_2}} {{out_1}}',
      input_files: { in_1: `${media.url}/trailer.mov` },
      output_files: { out_1: 'o.mp4' },
      vcpu_count: 1,
    });
    assert.equal(http.status, 422, JSON.stringify(http.body));
    // The 422's text, after where it is in the spec (body.ffmpeg_command is spec.command).
    assert.equal(failed.status!.errorMessage, `spec.command: ${http.body.detail[0].msg}`, JSON.stringify(http.body.detail));
    assert.match(failed.status!.errorMessage ?? '', /in_2/);
    const events = await k.events(name, TEAM);
    assert.ok(
      events.some((e) => e.type === 'Warning' && e.message.includes(failed.status!.errorMessage!)),
      JSON.stringify(events.map((e) => [e.type, e.reason, e.message])),
    );
    assert.deepEqual(await k.jobsOf(failed.metadata.uid), []);
  });

  test("RBAC decides who submits: docs/kubectl.md's Role lets a team member apply, wait and delete in its namespace only", async () => {
    // The Role and RoleBinding of docs/kubectl.md as written there, bound to a ServiceAccount of the team
    // instead of a group of people.
    const docs = await readFile(join(ROOT, 'docs/kubectl.md'), 'utf8');
    const rbac = [...docs.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1].replace(/^ {3}/gm, '')).find((y) => /^kind: Role$/m.test(y));
    assert.ok(rbac, 'docs/kubectl.md shows a Role');
    const groupSubject = '- { apiGroup: rbac.authorization.k8s.io, kind: Group, name: media-team }';
    assert.ok(rbac.includes(groupSubject), rbac);
    const bound = await k.apply(rbac.replace(groupSubject, `- { kind: ServiceAccount, name: editor, namespace: ${TEAM} }`));
    assert.equal(bound.code, 0, bound.stderr);
    const kubeconfig = join(dir, 'editor.kubeconfig');
    await writeFile(kubeconfig, (await svc.cluster.serviceAccountKubeConfig('editor', TEAM)).exportConfig(), { mode: 0o600 });
    const asEditor = (args: string[]) => runProcess(svc.cluster.env.KUBECTL, [`--kubeconfig=${kubeconfig}`, ...args]);
    const file = join(dir, 'editor.yaml');
    const resource = (namespace: string) => `apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata: { name: from-editor, namespace: ${namespace} }
spec:
  command: "${slowLine(1)}"
  outputFiles: { out_1: "out.mp4" }
  vcpuCount: 1
`;
    await writeFile(file, resource(UNBOUND));
    const elsewhere = await asEditor(['apply', '-f', file]);
    assert.notEqual(elsewhere.code, 0, 'no rights in another namespace');
    assert.match(elsewhere.stderr, /forbidden/i);

    await writeFile(file, resource(TEAM));
    ok('apply as the team', await asEditor(['apply', '-f', file]));
    ok(
      'wait as the team',
      await asEditor(['wait', '--for=jsonpath={.status.phase}=SUCCESS', 'ffc/from-editor', '-n', TEAM, '--timeout=120s']),
    );
    ok('describe as the team', await asEditor(['describe', 'ffc', 'from-editor', '-n', TEAM]));
    const status = await asEditor([
      'patch',
      'ffc',
      'from-editor',
      '-n',
      TEAM,
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"phase":"FAILED"}}',
    ]);
    assert.notEqual(status.code, 0, 'the team cannot write the status');
    assert.match(status.stderr, /forbidden/i);
    ok('delete as the team', await asEditor(['delete', 'ffc', 'from-editor', '-n', TEAM]));
  });

  test('the spec is immutable; kubectl delete of a running command stops its container and cancels it', async () => {
    const name = 'long-one';
    const applied = await k.apply(`apiVersion: ffmpeg-operator.dev/v1beta1
kind: FfmpegCommand
metadata: { name: ${name}, namespace: ${TEAM} }
spec:
  command: "${slowLine(120)}"
  outputFiles: { out_1: "slow.mp4" }
  vcpuCount: 1
  maxCommandRunSeconds: 300
`);
    assert.equal(applied.code, 0, applied.stderr);
    const { metadata } = await k.get(name, TEAM);
    const patched = await svc.kubectl(['patch', 'ffc', name, '-n', TEAM, '--type=merge', '-p', '{"spec":{"vcpuCount":2}}']);
    assert.notEqual(patched.code, 0, 'kubectl patch of the spec fails');
    assert.match(patched.stderr, /immutable/);
    assert.equal((await k.get(name, TEAM)).spec.vcpuCount, 1);

    const containerId = await k.runningContainer(metadata.uid);
    assert.ok((await svc.runningContainers()).includes(containerId), 'containerd runs the runner container');
    const processing = await until(
      'the resource to show PROCESSING',
      async () => {
        const now = await k.get(name, TEAM);
        return now.status?.phase === 'PROCESSING' && now;
      },
      30_000,
    );
    assert.equal(condition(processing.status, 'Running').status, 'True');

    const deleted = await svc.kubectl(['delete', 'ffc', name, '-n', TEAM, '--wait=false']);
    assert.equal(deleted.code, 0, deleted.stderr);
    await until('the container to stop', async () => !(await svc.runningContainers()).includes(containerId), 90_000);
    const { record } = await teamApi.waitForEnd(metadata.uid, 60_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'CANCELLED');
    await until('its Job to be deleted', async () => (await k.jobsOf(metadata.uid)).length === 0, 60_000);
    await until('the resource to be gone', async () => (await svc.kubectl(['get', 'ffc', name, '-n', TEAM])).code !== 0, 60_000);
  });
});

describe('a v1alpha1 FfmpegCommand of the previous release after helm upgrade', () => {
  let svc: InstalledService;
  let previous: Record<string, string>;

  before(async () => {
    // The previous release's images, built by its own scripts from its commit (cached by content).
    const start = performance.now();
    const built = await runProcess('bash', [join(ROOT, 'e2e/node/previous-release.sh')]);
    if (built.code !== 0) throw new Error(`e2e/node/previous-release.sh failed: ${built.stderr}`);
    previous = parseEnvText(built.stdout);
    console.log(`# previous release ${previous.FFOP_PREVIOUS_RELEASE}: images in ${((performance.now() - start) / 1000).toFixed(1)} s`);
    svc = await installOnRealNode({ release: { chart: previous.FFOP_PREVIOUS_CHART, images: previous } });
    console.log(`# stage times (s): ${JSON.stringify(svc.timings)}`);
  });
  after(async () => {
    await svc?.close();
  });

  test('a command running through the upgrade ends SUCCESS, its resource served as v1beta1 with conditions', async () => {
    const api = svc.client();
    const crdVersions = async () =>
      ok(
        'kubectl get crd',
        await svc.kubectl([
          'get',
          'crd',
          'ffmpegcommands.ffmpeg-operator.dev',
          '-o',
          'jsonpath={range .spec.versions[*]}{.name}:{.served}:{.storage} {end}',
        ]),
      )
        .trim()
        .split(' ')
        .sort()
        .join(' ');
    assert.equal(await crdVersions(), 'v1alpha1:true:true', 'the previous release knows v1alpha1 only');
    const slow = (seconds: number) => ({
      ffmpeg_command: slowLine(seconds),
      output_files: { out_1: 'slow.mp4' },
      vcpu_count: 1,
      max_command_run_seconds: 300,
    });
    const finished = await api.submit(slow(1));
    assert.equal((await api.waitForEnd(finished, 120_000)).record.status, 'SUCCESS');
    // Long enough to outlast the upgrade (the hook Job, then both Deployments rolling).
    const running = await api.submit(slow(120));
    await until('the command to run', async () => {
      const pods = await svc.kubectl([
        'get',
        'pods',
        '-l',
        `${LABELS.commandId}=${running}`,
        '-o',
        'jsonpath={.items[*].status.containerStatuses[0].state.running.startedAt}',
      ]);
      return pods.stdout.trim() !== '';
    });
    assert.equal((await svc.kubectl(['get', 'ffc', running, '-o', 'jsonpath={.apiVersion}'])).stdout, 'ffmpeg-operator.dev/v1alpha1');

    // This tree's chart and images, with the same values otherwise (as a platform team upgrades).
    const values = structuredClone(svc.values) as { image: Record<string, string>; runner: { image: Record<string, string> } };
    const image = (ref: string) => ({ repository: ref.slice(0, ref.lastIndexOf(':')), tag: ref.slice(ref.lastIndexOf(':') + 1) });
    Object.assign(values.image, image(svc.images.FFOP_SERVICE_IMAGE));
    Object.assign(values.runner.image, image(svc.images.FFOP_RUNNER_IMAGE));
    const file = join(svc.cluster.stateDir, 'values-upgrade.json');
    await writeFile(file, JSON.stringify(values, null, 2));
    const start = performance.now();
    const upgraded = await svc.helm(['upgrade', RELEASE, CHART, '-f', file, '--wait', '--timeout=5m']);
    assert.equal(upgraded.code, 0, upgraded.stderr);
    await svc.rolledOut();
    console.log(`# helm upgrade (CRD hook, rollout): ${((performance.now() - start) / 1000).toFixed(1)} s`);
    assert.equal(await crdVersions(), 'v1alpha1:true:false v1beta1:true:true', 'the pre-upgrade hook applied the new CRD');
    // kubectl's discovery cache still has the previous CRD (v1alpha1 the preferred version): as
    // docs/kubectl.md tells users, it is removed after the upgrade.
    await rm(join(svc.cluster.stateDir, 'kubectl-cache'), { recursive: true, force: true });
    assert.equal(
      (await api.get(`/v1/commands/${running}`)).body.status,
      'PROCESSING',
      'the command was still running when the new release took over',
    );

    const { record } = await api.waitForEnd(running, 240_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
    const resource = await until(`${running}'s status to show SUCCESS`, async () => {
      const now = JSON.parse(ok('kubectl get ffc', await svc.kubectl(['get', 'ffc', running, '-o', 'json']))) as Resource;
      return now.status?.phase === 'SUCCESS' && now;
    });
    assert.equal(resource.apiVersion, 'ffmpeg-operator.dev/v1beta1');
    assert.equal(resource.status!.commandId, running);
    assert.equal(condition(resource.status, 'Succeeded').status, 'True');
    assert.equal(resource.status!.outputs?.[0].storageUrl, record.output_files.out_1.storage_url);
    assert.equal((await fetch(record.output_files.out_1.storage_url)).status, 200);

    // Both resources of the previous release show the user-facing spec of their commands (the operator
    // writes it once, for the one that ended before the upgrade too) and their conditions.
    for (const id of [finished, running]) {
      const shown = await until(`${id}'s spec to be written`, async () => {
        const now = JSON.parse(ok('kubectl get ffc', await svc.kubectl(['get', 'ffc', id, '-o', 'json']))) as Resource & {
          spec?: { command?: string; outputFiles?: Record<string, string> };
        };
        return now.spec?.command !== undefined && now.status?.conditions !== undefined && now;
      });
      assert.equal(shown.spec.command, (await api.get(`/v1/commands/${id}`)).body.original_request.ffmpeg_command);
      assert.deepEqual(shown.spec.outputFiles, { out_1: 'slow.mp4' });
      assert.equal(condition(shown.status, 'Succeeded').status, 'True');
    }
    const patched = await svc.kubectl(['patch', 'ffc', finished, '--type=merge', '-p', '{"spec":{"vcpuCount":2}}']);
    assert.notEqual(patched.code, 0, 'immutable once written');
    assert.match(patched.stderr, /immutable/);

    const table = ok('kubectl get ffc', await svc.kubectl(['get', 'ffc']));
    for (const id of [finished, running]) assert.match(table, new RegExp(`^${id}\\s+SUCCESS\\s`, 'm'), table);
    assert.equal((await api.get(`/v1/commands/${finished}`)).body.status, 'SUCCESS');
    // v1alpha1 is still served, with a warning that points at v1beta1.
    const old = await svc.kubectl(['get', 'ffmpegcommands.v1alpha1.ffmpeg-operator.dev', running, '-o', 'jsonpath={.status.phase}']);
    assert.equal(old.code, 0, old.stderr);
    assert.equal(old.stdout, 'SUCCESS');
    assert.match(old.stderr, /Warning:.*v1beta1/);
  });
});
