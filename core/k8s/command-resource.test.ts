import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { CommandRow } from '../commands/commands-repo.ts';
import { createCommandResource } from './command-resource.ts';
import type { FfmpegCommandObject } from './ffmpeg-command.ts';
import { LABELS, PLURAL } from './names.ts';

// Only the columns the resource is made of.
const row = {
  id: 'cmd-1',
  accountId: 'acc-1',
  environmentName: 'main',
  commandType: 'FFMPEG',
  vcpuCount: 2,
  maxCommandRunSeconds: 300,
  steps: [{}, {}],
  isPrivate: false,
  metadata: { job: 42 },
  originalRequest: {
    ffmpeg_commands: ['-i {{in_1}} {{out_1}}', '-i {{out_1}} {{out_2}}'],
    input_files: { in_1: 'https://example.com/a.mp4' },
    output_files: { out_1: 'b.mp4', out_2: 'c.mp4' },
    max_command_run_seconds: 300,
    vcpu_count: 2,
  },
} as unknown as CommandRow;

/** A commands repo holding `stored` (or nothing), recording the stamps. */
function repo(stored: CommandRow | null) {
  const stamps: { id: string; at: unknown }[] = [];
  return {
    stamps,
    findById: (id: string) => Promise.resolve(stored && stored.id === id ? stored : null),
    update: (id: string, patch: { resourceCreatedAt?: Date | null }) => {
      stamps.push({ id, at: patch.resourceCreatedAt });
      return Promise.resolve();
    },
  };
}

/** The API server's createNamespacedCustomObject: answers with `answer`, recording the requests. */
function apiServer(answer: () => Promise<unknown>) {
  const created: { namespace: string; plural: string; body: FfmpegCommandObject }[] = [];
  const api = {
    createNamespacedCustomObject: (req: { namespace: string; plural: string; body: FfmpegCommandObject }) => {
      created.push(req);
      return answer();
    },
  } as unknown as CustomObjectsApi;
  return { api, created };
}

test('a stored command: its FfmpegCommand is created from the row, then the row is stamped', async () => {
  const commands = repo(row);
  const server = apiServer(() => Promise.resolve({ metadata: { uid: 'uid-1' } }));
  const before = Date.now();
  assert.deepEqual(await createCommandResource(server.api, 'ns', commands, 'cmd-1'), { uid: 'uid-1' });
  assert.equal(server.created.length, 1);
  const { namespace, plural, body } = server.created[0];
  assert.deepEqual([namespace, plural, body.metadata?.name, body.metadata?.namespace], ['ns', PLURAL, 'cmd-1', 'ns']);
  // The user-facing spec: the request as submitted, camelCased (what kubectl shows and a person would write).
  assert.deepEqual(body.spec, {
    commands: ['-i {{in_1}} {{out_1}}', '-i {{out_1}} {{out_2}}'],
    inputFiles: { in_1: 'https://example.com/a.mp4' },
    outputFiles: { out_1: 'b.mp4', out_2: 'c.mp4' },
    vcpuCount: 2,
    maxCommandRunSeconds: 300,
    metadata: { job: 42 },
    isPrivate: false,
  });
  assert.equal(body.metadata?.labels?.[LABELS.account], 'acc-1');
  assert.equal(commands.stamps.length, 1);
  assert.equal(commands.stamps[0].id, 'cmd-1');
  assert.ok(commands.stamps[0].at instanceof Date && commands.stamps[0].at.getTime() >= before);
});

test('the new uid is told before the row is stamped, and even when the stamp fails', async () => {
  const heard: { uid: string; stampsThen: number }[] = [];
  const commands = repo(row);
  const failingStamp = { ...commands, update: () => Promise.reject(new Error('database down')) };
  const server = apiServer(() => Promise.resolve({ metadata: { uid: 'uid-2' } }));
  await createCommandResource(server.api, 'ns', commands, 'cmd-1', (uid) => heard.push({ uid, stampsThen: commands.stamps.length }));
  assert.deepEqual(heard, [{ uid: 'uid-2', stampsThen: 0 }]);
  await assert.rejects(
    createCommandResource(server.api, 'ns', failingStamp, 'cmd-1', (uid) => heard.push({ uid, stampsThen: -1 })),
    /database down/,
  );
  assert.deepEqual(heard[1], { uid: 'uid-2', stampsThen: -1 });
});

test('a resource that exists already: no uid, and the row is stamped all the same', async () => {
  const commands = repo(row);
  const server = apiServer(() => Promise.reject(Object.assign(new Error('AlreadyExists'), { code: 409 })));
  assert.deepEqual(await createCommandResource(server.api, 'ns', commands, 'cmd-1'), { uid: null });
  assert.equal(commands.stamps.length, 1);
});

test('a command whose row is gone: nothing is created or stamped', async () => {
  const commands = repo(null);
  const server = apiServer(() => Promise.resolve({ metadata: { uid: 'uid-1' } }));
  assert.equal(await createCommandResource(server.api, 'ns', commands, 'cmd-1'), null);
  assert.equal(server.created.length, 0);
  assert.equal(commands.stamps.length, 0);
});

test('a refused create: the error is thrown and the row left unstamped, for the operator to create it later', async () => {
  const commands = repo(row);
  const server = apiServer(() => Promise.reject(Object.assign(new Error('Forbidden'), { code: 403 })));
  await assert.rejects(createCommandResource(server.api, 'ns', commands, 'cmd-1'), /Forbidden/);
  assert.equal(commands.stamps.length, 0);
});
