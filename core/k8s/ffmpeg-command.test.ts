import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CommandRow } from '../commands/commands-repo.ts';
import { commandIdOf, madeByTheApi, requestBodyOf, specOf } from './ffmpeg-command.ts';
import { LABELS, MANAGED_BY } from './names.ts';

test('a spec is the HTTP body in camelCase, and a stored request gives back the same spec', () => {
  const spec = {
    command: '-i {{in_1}} -vf scale=-2:720 {{out_1}}',
    inputFiles: { in_1: 'https://example.com/a.mov' },
    outputFiles: { out_1: 'a.mp4' },
    vcpuCount: 2,
    maxCommandRunSeconds: 600,
    metadata: { team: 'media', n: 1 },
    isPrivate: true,
  };
  const body = requestBodyOf(spec);
  assert.deepEqual(body, {
    ffmpeg_command: spec.command,
    input_files: spec.inputFiles,
    output_files: spec.outputFiles,
    vcpu_count: 2,
    max_command_run_seconds: 600,
    metadata: spec.metadata,
    is_private: true,
  });
  const row = {
    originalRequest: body,
    vcpuCount: 2,
    maxCommandRunSeconds: 600,
    isPrivate: true,
    metadata: spec.metadata,
  } as unknown as CommandRow;
  assert.deepEqual(specOf(row), spec);
});

test('outputFolder stands for OUTPUT_FOLDER, a chain for ffmpeg_commands; what a spec leaves out stays out of the body', () => {
  assert.deepEqual(requestBodyOf({ command: '-i {{in_1}} x/%d.png', outputFolder: true, inputCompressedFolder: 'https://h/a.zip' }), {
    ffmpeg_command: '-i {{in_1}} x/%d.png',
    input_compressed_folder: 'https://h/a.zip',
    output_files: 'OUTPUT_FOLDER',
  });
  assert.deepEqual(requestBodyOf({ commands: ['a', 'b'], outputFiles: { out_1: 'x' } }), {
    ffmpeg_commands: ['a', 'b'],
    output_files: { out_1: 'x' },
  });
  const folder = {
    originalRequest: { ffmpeg_command: 'c', output_files: 'OUTPUT_FOLDER' },
    vcpuCount: 1,
    maxCommandRunSeconds: 5,
    isPrivate: false,
    metadata: null,
  };
  assert.deepEqual(specOf(folder as unknown as CommandRow), {
    command: 'c',
    outputFolder: true,
    vcpuCount: 1,
    maxCommandRunSeconds: 5,
    isPrivate: false,
  });
});

test("the API's resources are told apart from resources made by anyone else, whose command id is their uid", () => {
  const api = {
    metadata: { name: 'c1', namespace: 'ops', uid: 'u1', labels: { [LABELS.commandId]: 'c1', [LABELS.managedBy]: MANAGED_BY } },
  };
  assert.equal(madeByTheApi(api, 'ops'), true);
  assert.equal(commandIdOf(api, 'ops'), 'c1');
  // The same labels in another namespace (or a name that is not the label) are a user's resource.
  const elsewhere = { metadata: { ...api.metadata, namespace: 'team' } };
  assert.equal(madeByTheApi(elsewhere, 'ops'), false);
  assert.equal(commandIdOf(elsewhere, 'ops'), 'u1');
  const renamed = { metadata: { ...api.metadata, name: 'mine' } };
  assert.equal(commandIdOf(renamed, 'ops'), 'u1');
  assert.equal(commandIdOf({ metadata: { name: 'x', namespace: 'ops', uid: 'u2' } }, 'ops'), 'u2');
});
