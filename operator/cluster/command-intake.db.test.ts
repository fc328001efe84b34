// The intake of FfmpegCommands people make, on a real database; the API server's side (namespaces,
// the resource, its status) is played by doubles named for it. e2e/cluster/kubectl-resources.cluster.test.ts
// runs the same through a real API server.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { Quotas } from '../../core/accounts/quotas.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { insertSubmitted } from '../../core/commands/ended-at-submit.ts';
import { openTestDatabase } from '../../core/db/testing/test-database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import type { FfmpegCommandObject, FfmpegCommandSpec, FfmpegCommandStatus } from '../../core/k8s/ffmpeg-command.ts';
import { NAMESPACE_BINDING } from '../../core/k8s/names.ts';
import { createLogger } from '../../core/logger.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import type { CommandEvent } from './command-events.ts';
import { CommandIntake } from './command-intake.ts';
import type { ResourceRef } from './command-resources.ts';

const SPEC: FfmpegCommandSpec = { command: '-f lavfi -i testsrc=d=1 {{out_1}}', outputFiles: { out_1: 'o.mp4' }, vcpuCount: 1 };

/** What a test needs: a database with an account, and the API server's namespaces and resources as doubles. */
async function intakeFixture() {
  const database = await openTestDatabase();
  const accounts = new AccountsRepo(database.db);
  const caller = await newCaller(accounts, 'team', 'free');
  const commands = new CommandsRepo(database.db);
  const namespacesDouble = new Map<string, Record<string, string>>([
    ['bound', { [NAMESPACE_BINDING.account]: caller.account.id, [NAMESPACE_BINDING.environment]: 'staging' }],
    ['unbound', {}],
    ['unknown-account', { [NAMESPACE_BINDING.account]: randomUUID() }],
  ]);
  const resourcesDouble = new Map<string, FfmpegCommandObject>();
  const statusWrites: { ref: string; status: FfmpegCommandStatus }[] = [];
  const events: (CommandEvent & { ref: string })[] = [];
  const changed: string[] = [];
  let stored = 0;
  const key = (r: Pick<ResourceRef, 'namespace' | 'name'>) => `${r.namespace}/${r.name}`;
  const namespaceReads = { running: 0, most: 0, gate: null as Promise<void> | null };
  const intake = new CommandIntake({
    namespaceLabels: async (ns) => {
      namespaceReads.most = Math.max(namespaceReads.most, ++namespaceReads.running);
      await namespaceReads.gate;
      namespaceReads.running--;
      return namespacesDouble.get(ns) ?? null;
    },
    resources: {
      read: async (ref) => resourcesDouble.get(key(ref)) ?? null,
      patchStatus: async (ref, status) => void statusWrites.push({ ref: key(ref), status }),
    },
    accounts,
    commands,
    insert: (row, quotas) => insertSubmitted(database.db, row, quotas),
    quotas: new Quotas(new FilesRepo(database.db), () => new Date()),
    storage: new LocalStorage({ root: '/nonexistent', publicBaseUrl: 'http://127.0.0.1:9', signingKey: 'k'.repeat(32) }),
    logger: createLogger('silent'),
    event: (ref, e) => events.push({ ...e, ref: key(ref) }),
    changed: (id) => changed.push(id),
    stored: () => stored++,
  });
  /** A resource as a person would create it: uid and creation time set by the API server. */
  const made = (namespace: string, name: string, spec: FfmpegCommandSpec): ResourceRef => {
    const uid = randomUUID();
    resourcesDouble.set(`${namespace}/${name}`, {
      metadata: { namespace, name, uid, generation: 1, creationTimestamp: new Date() },
      spec,
    });
    return { namespace, name, uid };
  };
  return { database, caller, commands, intake, made, statusWrites, events, changed, namespaceReads, stored: () => stored };
}

test('in a bound namespace: stored for its account and environment, under the resource uid, with where the resource is', async () => {
  const f = await intakeFixture();
  try {
    const ref = f.made('bound', 'clip', SPEC);
    await f.intake.takeInNow(ref);
    const row = (await f.commands.findById(ref.uid))!;
    assert.equal(row.accountId, f.caller.account.id);
    assert.equal(row.environmentName, 'staging');
    assert.equal(row.status, 'QUEUED');
    assert.deepEqual([row.resourceNamespace, row.resourceName], ['bound', 'clip']);
    assert.ok(row.resourceCreatedAt, 'its resource exists: the operator must not make one');
    assert.equal(row.originalRequest.ffmpeg_command, SPEC.command);
    assert.equal(f.stored(), 1);
    assert.deepEqual(
      f.events.map((e) => [e.ref, e.reason]),
      [['bound/clip', 'Queued']],
    );
    // QUEUED, written before the reconciler hears of it, so kubectl shows that state first.
    assert.deepEqual(
      f.statusWrites.map((w) => [w.ref, w.status.phase, w.status.commandId, w.status.observedGeneration]),
      [['bound/clip', 'QUEUED', ref.uid, 1]],
    );
    assert.deepEqual(f.changed, []);
    // Seen again (a resync before the watch saw that status): nothing is stored twice; the status is mirrored again.
    await f.intake.takeInNow(ref);
    assert.deepEqual(f.changed, [ref.uid]);
    assert.deepEqual(await f.commands.listIds(f.caller.account.id, 10, 0), [ref.uid]);
    assert.equal(f.stored(), 1);
  } finally {
    await f.database.close();
  }
});

test('refused for good, with no command: an unbound namespace, an unknown account, a 422, a plan', async () => {
  const f = await intakeFixture();
  try {
    const cases: [string, FfmpegCommandSpec, string, RegExp][] = [
      [
        'unbound',
        SPEC,
        'NAMESPACE_NOT_BOUND',
        /^namespace unbound is not bound to an account; a cluster admin binds it with: kubectl label namespace unbound ffmpeg-operator.dev\/account=<account id>$/,
      ],
      [
        'unknown-account',
        SPEC,
        'NAMESPACE_NOT_BOUND',
        /^namespace unknown-account is bound to account [0-9a-f-]{36}, which does not exist/,
      ],
      ['gone-namespace', SPEC, 'NAMESPACE_NOT_BOUND', /^namespace gone-namespace is not bound/],
      ['bound', { ...SPEC, command: '-i {{in_2}} {{out_1}}' }, 'INVALID_COMMAND', /^spec\.command: Value error, .*in_2/],
      ['bound', { ...SPEC, outputFiles: { out_9: 'x.mp4' } }, 'INVALID_COMMAND', /^spec\.(command|outputFiles)/],
      ['bound', { ...SPEC, vcpuCount: 64 }, 'NOT_ALLOWED', /^vcpu_count 64 exceeds the maximum of \d+ vCPUs of your plan \(free\)$/],
    ];
    for (const [ns, spec, why, message] of cases) {
      const ref = f.made(ns, `r-${why.toLowerCase()}-${f.statusWrites.length}`, spec);
      await f.intake.takeInNow(ref);
      const write = f.statusWrites.at(-1)!;
      assert.equal(write.ref, `${ns}/${ref.name}`);
      assert.equal(write.status.phase, 'FAILED');
      assert.equal(write.status.errorStatus, why);
      assert.match(write.status.errorMessage!, message);
      assert.equal(f.events.at(-1)!.reason, 'Refused');
      assert.ok(f.events.at(-1)!.warning);
      assert.equal(await f.commands.findById(ref.uid), null, `${ns}: nothing stored`);
    }
    assert.equal(f.stored(), 0);
  } finally {
    await f.database.close();
  }
});

test('one ffmpeg would stop on is stored FAILED at once, as the HTTP API does, with a Failed Event', async () => {
  const f = await intakeFixture();
  try {
    const ref = f.made('bound', 'bad-filter', { ...SPEC, command: '-f lavfi -i testsrc=d=1 -vf nosuchfilter {{out_1}}' });
    await f.intake.takeInNow(ref);
    const row = (await f.commands.findById(ref.uid))!;
    assert.equal(row.status, 'FAILED');
    assert.equal(row.errorStatus, 'FFMPEG_FAILED');
    assert.deepEqual(
      f.statusWrites.map((w) => [w.status.phase, w.status.errorStatus]),
      [['FAILED', 'FFMPEG_FAILED']],
    );
    assert.deepEqual(
      f.events.map((e) => e.reason),
      ['Queued', 'Failed'],
    );
    assert.equal(f.stored(), 0, 'nothing for the reconciler to start');
  } finally {
    await f.database.close();
  }
});

test('a resource gone, replaced under its name, or decided already is left alone', async () => {
  const f = await intakeFixture();
  try {
    await f.intake.takeInNow({ namespace: 'bound', name: 'never-made', uid: randomUUID() });
    const replaced = f.made('bound', 'again', SPEC);
    await f.intake.takeInNow({ ...replaced, uid: randomUUID() });
    assert.equal(await f.commands.findById(replaced.uid), null);
    assert.deepEqual([f.statusWrites.length, f.events.length, f.stored()], [0, 0, 0]);
  } finally {
    await f.database.close();
  }
});

test('thousands applied at once: at most 8 intakes run together, and every resource is taken in', async () => {
  const f = await intakeFixture();
  try {
    let open: () => void = () => {};
    f.namespaceReads.gate = new Promise((resolve) => (open = resolve));
    const refs = Array.from({ length: 30 }, (_, i) => f.made('bound', `many-${i}`, SPEC));
    refs.forEach((ref) => f.intake.takeIn(ref));
    refs.forEach((ref) => f.intake.takeIn(ref)); // a resync meanwhile adds nothing
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(f.namespaceReads.running, 8);
    open();
    for (const deadline = Date.now() + 10_000; f.stored() < 30 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
    assert.equal(f.stored(), 30);
    assert.equal(f.namespaceReads.most, 8);
    assert.equal((await f.commands.listIds(f.caller.account.id, 100, 0)).length, 30);
  } finally {
    await f.database.close();
  }
});
