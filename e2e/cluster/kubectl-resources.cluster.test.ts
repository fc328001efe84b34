// FfmpegCommands that people make (kubectl apply, GitOps) in namespaces of their own: taken in for the
// account the namespace is bound to, run as commands like the API's, refused with the HTTP API's own
// words when they cannot run. A real API server checks the CRD; the operator runs with the RBAC the
// chart renders for operator.watchNamespaces.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { GROUP, LABELS, NAMESPACE_BINDING, PLURAL, VERSION } from '../../core/k8s/names.ts';
import type { FfmpegCommandObject, FfmpegCommandSpec } from '../../core/k8s/ffmpeg-command.ts';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { makeClip, startMediaServer, type MediaServer } from '../harness.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';

const TEAM = 'media-team';
const SMALL_TEAM = 'small-team';
const UNBOUND = 'unbound-team';

describe('FfmpegCommands made with kubectl', () => {
  let svc: ClusterService;
  let media: MediaServer;
  let custom: CustomObjectsApi;
  let events: CoreV1Api;
  let teamKey: string;
  let smallKey: string;

  /** The account behind an API key. */
  const accountOf = async (key: string) => (await new AccountsRepo(svc.database.db).authenticate(key))!.account;

  const create = (namespace: string, name: string, spec: FfmpegCommandSpec) =>
    custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'FfmpegCommand', metadata: { name, namespace }, spec },
    }) as Promise<FfmpegCommandObject>;
  const read = (namespace: string, name: string) =>
    custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name }) as Promise<FfmpegCommandObject>;
  /** Polls the resource until `check` holds. */
  const until = async (namespace: string, name: string, check: (o: FfmpegCommandObject) => boolean, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const obj = await read(namespace, name);
      if (check(obj)) return obj;
      if (Date.now() > deadline) assert.fail(`${namespace}/${name} did not get there: ${JSON.stringify(obj.status)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const ended = (o: FfmpegCommandObject) => o.status?.phase === 'SUCCESS' || o.status?.phase === 'FAILED';
  const reasonsOf = async (namespace: string, name: string) =>
    (await events.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).items.map(
      (e) => `${e.type}/${e.reason}`,
    );
  const conditionOf = (o: FfmpegCommandObject, type: string) => o.status?.conditions?.find((c) => c.type === type);

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4'));
    svc = await startClusterService({ allow: [media.allowEntry], watchNamespaces: [TEAM, SMALL_TEAM, UNBOUND] });
    custom = svc.cluster.kubeconfig.makeApiClient(CustomObjectsApi);
    events = svc.cluster.kubeconfig.makeApiClient(CoreV1Api);
    teamKey = await svc.newAccount('pro');
    await new PlansRepo(svc.database.db).create({
      name: 'tiny',
      maxVcpus: 1,
      maxCommandRunSeconds: 600,
      requestsPerMinute: 1_000_000,
      storageQuotaBytes: 1e9,
      processingQuotaBytesPerMonth: 1e9,
      privateFiles: false,
    });
    smallKey = await svc.newAccount('tiny');
    await svc.cluster.kubectl(['label', 'namespace', TEAM, `${NAMESPACE_BINDING.account}=${(await accountOf(teamKey)).id}`]);
    await svc.cluster.kubectl(['label', 'namespace', SMALL_TEAM, `${NAMESPACE_BINDING.account}=${(await accountOf(smallKey)).id}`]);
  });
  after(async () => {
    await svc?.close();
    await media?.close();
  });

  test('kubectl apply of the YAML a person writes: SUCCESS, outputs in .status, one command the API polls and lists, Events', async () => {
    const yaml = [
      `apiVersion: ${GROUP}/${VERSION}`,
      'kind: FfmpegCommand',
      `metadata: { name: trailer-160p, namespace: ${TEAM} }`,
      'spec:',
      '  command: "-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_1}}"',
      `  inputFiles: { in_1: "${media.url}/clip.mp4" }`,
      '  outputFiles: { out_1: "trailer-160p.mp4" }',
      '  vcpuCount: 2',
      '  maxCommandRunSeconds: 120',
    ].join('\n');
    const applied = await svc.cluster.kubectl(['apply', '-f', '-'], yaml);
    assert.equal(applied.code, 0, applied.stderr);
    const waited = await svc.cluster.kubectl([
      'wait',
      '-n',
      TEAM,
      '--for=jsonpath={.status.phase}=SUCCESS',
      'ffc/trailer-160p',
      '--timeout=120s',
    ]);
    assert.equal(waited.code, 0, waited.stderr);
    const obj = await read(TEAM, 'trailer-160p');
    const status = obj.status!;
    assert.equal(status.commandId, obj.metadata!.uid, 'the command id is the resource uid');
    assert.equal(status.outputs!.length, 1);
    const out = status.outputs![0];
    assert.equal(out.alias, 'out_1');
    assert.equal(out.fileName, 'trailer-160p.mp4');
    assert.equal(out.width, 160);
    assert.ok(out.duration! > 0 && out.sizeBytes > 0 && out.codec);
    const download = await fetch(out.storageUrl!);
    assert.equal(download.status, 200);
    assert.equal(Number(download.headers.get('content-length')), out.sizeBytes);
    assert.equal(conditionOf(obj, 'Accepted')?.status, 'True');
    assert.equal(conditionOf(obj, 'Succeeded')?.status, 'True');
    assert.equal(conditionOf(obj, 'Failed')?.status, 'False');
    assert.equal(
      (await svc.cluster.kubectl(['wait', '-n', TEAM, '--for=condition=Succeeded', 'ffc/trailer-160p', '--timeout=5s'])).code,
      0,
    );

    // The HTTP API knows it as the namespace's account's command, with the same output.
    const api = svc.client(teamKey);
    const record = (await api.get(`/v1/commands/${status.commandId}`)).body;
    assert.equal(record.status, 'SUCCESS');
    assert.equal(record.output_files.out_1.file_id, out.fileId);
    assert.equal(record.output_files.out_1.storage_url, out.storageUrl);
    assert.equal(record.original_request.ffmpeg_command, '-i {{in_1}} -vf scale=160:-2 -c:v libx264 -preset ultrafast {{out_1}}');
    assert.ok((await api.get('/v1/commands')).body.some((c: { command_id: string }) => c.command_id === status.commandId));
    assert.equal((await svc.client().get(`/v1/commands/${status.commandId}`)).status, 404, "another account's key does not see it");

    const reasons = await reasonsOf(TEAM, 'trailer-160p');
    for (const r of ['Normal/Queued', 'Normal/Started', 'Normal/StepSucceeded', 'Normal/Succeeded'])
      assert.ok(reasons.includes(r), `${r} in ${reasons.join(', ')}`);
    const described = await svc.cluster.kubectl(['describe', '-n', TEAM, 'ffc/trailer-160p']);
    assert.match(described.stdout, /Succeeded/);
    const listed = await svc.cluster.kubectl(['get', '-n', TEAM, 'ffc']);
    assert.match(listed.stdout, /trailer-160p\s+SUCCESS/);
  });

  test('a chain declared in YAML runs its steps in order, a later one reading an earlier output', async () => {
    await create(TEAM, 'chain', {
      commands: [
        '-f lavfi -i testsrc=size=64x64:duration=1 -c:v libx264 -preset ultrafast {{out_1}}',
        '-i {{out_1}} -vf scale=32:32 -c:v libx264 -preset ultrafast {{out_2}}',
      ],
      outputFiles: { out_1: 'a.mp4', out_2: 'b.mp4' },
      vcpuCount: 1,
    });
    const obj = await until(TEAM, 'chain', ended);
    assert.equal(obj.status!.phase, 'SUCCESS', JSON.stringify(obj.status));
    assert.deepEqual(
      obj.status!.outputs!.map((o) => [o.alias, o.width]),
      [
        ['out_1', 64],
        ['out_2', 32],
      ],
    );
    assert.equal((await reasonsOf(TEAM, 'chain')).filter((r) => r === 'Normal/StepSucceeded').length, 2);
  });

  test('in a namespace bound to no account: refused for good, no command, no Job', async () => {
    const made = await create(UNBOUND, 'stray', { command: '-f lavfi -i testsrc=duration=1 {{out_1}}', outputFiles: { out_1: 'o.mp4' } });
    const obj = await until(UNBOUND, 'stray', ended, 30_000);
    assert.equal(obj.status!.phase, 'FAILED');
    assert.equal(obj.status!.errorStatus, 'NAMESPACE_NOT_BOUND');
    assert.match(obj.status!.errorMessage!, /namespace unbound-team is not bound to an account; .*kubectl label namespace unbound-team/);
    const accepted = conditionOf(obj, 'Accepted')!;
    assert.deepEqual([accepted.status, accepted.reason], ['False', 'NamespaceNotBound']);
    assert.ok((await reasonsOf(UNBOUND, 'stray')).includes('Warning/Refused'));
    assert.equal(await new CommandsRepo(svc.database.db).findById(made.metadata!.uid!), null, 'no command was stored');
    const jobs = await svc.cluster.kubeconfig.makeApiClient(BatchV1Api).listNamespacedJob({ namespace: svc.cluster.namespace });
    assert.ok(!jobs.items.some((j) => j.metadata?.labels?.[LABELS.commandId] === made.metadata!.uid));
  });

  test("the plan's vCPU cap and the HTTP API's validation refuse a resource with the HTTP API's own words", async () => {
    const body = { ffmpeg_command: '-f lavfi -i testsrc=duration=1 {{out_1}}', output_files: { out_1: 'o.mp4' }, vcpu_count: 4 };
    const http = await svc.client(smallKey).post('/v1/run-ffmpeg-command', body);
    assert.equal(http.status, 403);
    await create(SMALL_TEAM, 'too-big', { command: body.ffmpeg_command, outputFiles: body.output_files, vcpuCount: 4 });
    const refused = await until(SMALL_TEAM, 'too-big', ended, 30_000);
    assert.equal(refused.status!.errorStatus, 'NOT_ALLOWED');
    assert.equal(refused.status!.errorMessage, http.body.detail);

    const undeclared = {
      ffmpeg_command: '-i {{in_2}} {{out_1}}',
      input_files: { in_1: `${media.url}/clip.mp4` },
      output_files: { out_1: 'o.mp4' },
    };
    const invalid = await svc.client(teamKey).post('/v1/run-ffmpeg-command', undeclared);
    assert.equal(invalid.status, 422);
    await create(TEAM, 'undeclared', {
      command: undeclared.ffmpeg_command,
      inputFiles: undeclared.input_files,
      outputFiles: undeclared.output_files,
    });
    const bad = await until(TEAM, 'undeclared', ended, 30_000);
    assert.equal(bad.status!.errorStatus, 'INVALID_COMMAND');
    assert.equal(bad.status!.errorMessage, `spec.command: ${invalid.body.detail[0].msg}`);
    assert.ok((await reasonsOf(TEAM, 'undeclared')).includes('Warning/Refused'));
  });

  test('kubectl delete cancels a running one: its Job stops, the API shows CANCELLED', async () => {
    await create(TEAM, 'slow', {
      command: '-re -f lavfi -i testsrc=size=32x32:rate=5 -c:v libx264 -preset ultrafast {{out_1}}',
      outputFiles: { out_1: 'o.mp4' },
      vcpuCount: 1,
    });
    const running = await until(TEAM, 'slow', (o) => o.status?.stage === 'FFMPEG_PROCESSING', 60_000);
    assert.equal(conditionOf(running, 'Running')?.status, 'True');
    const id = running.status!.commandId!;
    const deleted = await svc.cluster.kubectl(['delete', '-n', TEAM, 'ffc/slow', '--wait=false']);
    assert.equal(deleted.code, 0, deleted.stderr);
    const { record } = await svc.client(teamKey).waitForEnd(id, 60_000);
    assert.equal(record.status, 'FAILED');
    assert.equal(record.error_status, 'CANCELLED');
    const batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
    const jobsOf = async () =>
      (await batch.listNamespacedJob({ namespace: svc.cluster.namespace, labelSelector: `${LABELS.commandId}=${id}` })).items;
    for (let i = 0; i < 100 && (await jobsOf()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await jobsOf(), []);
  });

  test("attack: a resource named and labelled as another account's command is the team's own; deleting it cancels nothing else", async () => {
    const victim = svc.client();
    const victimId = await victim.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=32x32:rate=5:duration=4 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'v.mp4' },
      vcpu_count: 1,
    });
    const victimAccount = (await accountOf(svc.key)).id;
    const forged = await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: TEAM,
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'FfmpegCommand',
        metadata: {
          name: victimId,
          namespace: TEAM,
          labels: { [LABELS.commandId]: victimId, [LABELS.managedBy]: 'ffmpeg-operator', [LABELS.account]: victimAccount },
        },
        spec: {
          command: '-f lavfi -i testsrc=size=32x32:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}',
          outputFiles: { out_1: 'f.mp4' },
        },
        // The status subresource drops what a create says of status: it cannot claim a command.
        status: { commandId: victimId, phase: 'SUCCESS' },
      },
    });
    const own = await until(TEAM, victimId, (o) => o.status?.commandId !== undefined);
    assert.equal(own.status!.commandId, forged.metadata!.uid, 'known by its own uid, not the id its name and labels give');
    assert.equal((await svc.client(teamKey).get(`/v1/commands/${forged.metadata!.uid}`)).status, 200, "the team's command");
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: TEAM, plural: PLURAL, name: victimId });
    const { record } = await victim.waitForEnd(victimId, 120_000);
    assert.equal(record.status, 'SUCCESS', "the other account's command was not cancelled");
  });

  test('deleted and made again under the same name (kubectl replace --force, GitOps): a new command that runs; the old one stays cancelled', async () => {
    const slow = {
      command: '-re -f lavfi -i testsrc=size=32x32:rate=5 -c:v libx264 -preset ultrafast {{out_1}}',
      outputFiles: { out_1: 'o.mp4' },
      vcpuCount: 1,
    };
    await create(TEAM, 'remade', slow);
    const first = await until(TEAM, 'remade', (o) => o.status?.stage === 'FFMPEG_PROCESSING', 60_000);
    const firstId = first.status!.commandId!;
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: TEAM, plural: PLURAL, name: 'remade' });
    const again = await create(TEAM, 'remade', {
      command: '-f lavfi -i testsrc=size=32x32:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}',
      outputFiles: { out_1: 'o.mp4' },
    });
    const done = await until(TEAM, 'remade', ended);
    assert.equal(done.metadata!.uid, again.metadata!.uid);
    assert.equal(done.status!.commandId, again.metadata!.uid, "the new object's own command, not the old one's status");
    assert.equal(done.status!.phase, 'SUCCESS', JSON.stringify(done.status));
    const { record } = await svc.client(teamKey).waitForEnd(firstId, 60_000);
    assert.equal(record.error_status, 'CANCELLED');
    // Its last status (CANCELLED) never lands on the new object.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await read(TEAM, 'remade')).status!.commandId, again.metadata!.uid);
  });

  test('deleted while no operator ran: the next one finds it gone and cancels its command', async () => {
    await create(TEAM, 'orphaned', {
      command: '-re -f lavfi -i testsrc=size=32x32:rate=5 -c:v libx264 -preset ultrafast {{out_1}}',
      outputFiles: { out_1: 'o.mp4' },
      vcpuCount: 1,
    });
    const running = await until(TEAM, 'orphaned', (o) => o.status?.stage === 'FFMPEG_PROCESSING', 60_000);
    await svc.operator.stop();
    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: TEAM, plural: PLURAL, name: 'orphaned' });
    svc.operator = await svc.startOperator(`operator-${Date.now()}`);
    await svc.operator.leading;
    const { record } = await svc.client(teamKey).waitForEnd(running.status!.commandId!, 60_000);
    assert.equal(record.error_status, 'CANCELLED');
  });

  test('taken in once: an operator restart takes in nothing twice', async () => {
    await create(TEAM, 'once', {
      command: '-f lavfi -i testsrc=size=32x32:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}',
      outputFiles: { out_1: 'o.mp4' },
    });
    const done = await until(TEAM, 'once', ended);
    assert.equal(done.status!.phase, 'SUCCESS', JSON.stringify(done.status));
    await svc.restartOperator();
    const before = (await svc.client(teamKey).get('/v1/commands?limit=100')).body.length;
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await svc.client(teamKey).get('/v1/commands?limit=100')).body.length, before);
    assert.equal((await read(TEAM, 'once')).status!.commandId, done.status!.commandId);
  });
});
