import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSeccompProgram } from './seccomp-program.ts';

test("the filter is generated once, cached by the generator's content, and is a BPF program", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'seccomp-test-'));
  try {
    const path = await ensureSeccompProgram(dir);
    const program = await readFile(path);
    assert.ok(program.length > 0 && program.length % 8 === 0, `${program.length} bytes`); // struct sock_filter is 8 bytes
    const first = (await stat(path)).mtimeMs;
    assert.equal(await ensureSeccompProgram(dir), path);
    assert.equal((await stat(path)).mtimeMs, first);
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.endsWith('.tmp')),
      [],
    );
    // A prebuilt program is used as given; a missing one is an error, not a silent fallback.
    assert.equal(await ensureSeccompProgram(dir, path), path);
    await assert.rejects(ensureSeccompProgram(dir, join(dir, 'missing.bpf')), /does not exist/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
