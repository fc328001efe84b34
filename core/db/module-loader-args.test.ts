// The child process that creates a PGlite folder gets this process's module loaders (tsx), nothing else.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { moduleLoaderArgs } from './database.ts';

test('keeps --import / --require / loaders in both spellings, drops the rest', () => {
  assert.deepEqual(
    moduleLoaderArgs([
      '--require',
      '/x/preflight.cjs',
      '--import',
      'file:///x/loader.mjs',
      '--inspect=9229',
      '--cpu-prof',
      '--import=tsx',
      '--max-old-space-size=100',
      '-r',
      'a.cjs',
    ]),
    ['--require', '/x/preflight.cjs', '--import', 'file:///x/loader.mjs', '--import=tsx', '-r', 'a.cjs'],
  );
  assert.deepEqual(moduleLoaderArgs([]), []);
});
