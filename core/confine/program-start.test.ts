// Held starts on this host's real confinement (bubblewrap, seccomp, the built start gate library) and
// without a sandbox: a held program runs nothing of its own before it is let go, never runs when
// cancelled, and keeps nothing of the gate once it runs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Unconfined, type Confinement } from './confinement.ts';
import { handOver } from './hand-over.ts';
import type { ProcessLimits } from './limits.ts';
import { ProgramStart } from './program-start.ts';
import { setUpConfinement, setUpUnconfined } from './set-up.ts';
import { defaultStartGateLibrary } from './start-gate.ts';
import { isGone, outcomeOf } from './testing/process-outcome.ts';
import { testConfinement } from './testing/test-confinement.ts';

const LIMITS: ProcessLimits = { memoryBytes: 2 * 1024 ** 3, cpuSeconds: 60, fileSizeBytes: 1024 ** 2, openFiles: 256, processes: 256 };

/** The built library; the suite needs it (scripts/build.sh makes it, and `npm test` builds first). */
function builtLibrary(): string {
  const library = defaultStartGateLibrary();
  assert.ok(library, 'the start gate library is not built: run scripts/build.sh');
  return library;
}

/** Polls until `pid` is gone (a SIGKILL takes effect shortly after it is sent). */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 500; i++) {
    if (await isGone(pid)) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

for (const kind of ['bwrap', 'unconfined'] as const) {
  describe(`held starts (${kind})`, () => {
    let folder: string;
    let confinement: Confinement;
    let uid: number | undefined;
    const sh = (script: string) =>
      ProgramStart.ahead(confinement, { program: '/bin/sh', args: ['-c', script], folder, writable: true, uid, limits: LIMITS });

    before(async () => {
      if (kind === 'bwrap') {
        const t = await testConfinement();
        confinement = t.confinement;
        uid = t.uids?.acquire();
      } else {
        confinement = new Unconfined('unconfined', builtLibrary());
      }
      assert.equal(confinement.holdsStarts, true, 'this confinement has the start gate');
      folder = await mkdtemp(join(tmpdir(), 'held-start-'));
      await chmod(folder, 0o755);
      if (uid !== undefined) await handOver(folder, uid);
    });

    after(async () => {
      await rm(folder, { recursive: true, force: true });
    });

    test('it is loaded and waiting before it is let go, and runs its program only then', async () => {
      const start = sh('cat input.txt > copy.txt');
      assert.equal(start.isHeld, true);
      assert.equal(await start.ready(), true);
      // Written after the program was started: a held program opens its files only once let go.
      await writeFile(join(folder, 'input.txt'), 'written while it waited\n');
      if (uid !== undefined) await handOver(folder, uid);
      assert.equal(existsSync(join(folder, 'copy.txt')), false, 'nothing ran before it was let go');
      const run = await outcomeOf(await start.go());
      assert.equal(run.code, 0, run.stderr);
      assert.equal(await readFile(join(folder, 'copy.txt'), 'utf8'), 'written while it waited\n');
    });

    test('cancelled, it never runs and is gone', async () => {
      const start = sh('touch cancelled-ran.txt');
      assert.equal(await start.ready(), true);
      const pid = start.heldPid!;
      start.cancel();
      assert.equal(await gone(pid), true, 'the held process is gone');
      assert.equal(existsSync(join(folder, 'cancelled-ran.txt')), false);
      await assert.rejects(start.go(), /already used/);
    });

    test('once let go, the program has no gate descriptor and no gate variables (attack: reaching the runner through them)', async () => {
      const script = 'ls /proc/self/fd; env';
      const held = await outcomeOf(await sh(script).go());
      const plain = await outcomeOf(
        await ProgramStart.ahead(new Unconfined(), {
          program: '/bin/sh',
          args: ['-c', script],
          folder,
          writable: true,
          limits: LIMITS,
        }).go(),
      );
      assert.equal(held.code, 0, held.stderr);
      const descriptors = (out: string) => out.split('\n').filter((line) => /^\d+$/.test(line));
      // ls's own descriptor for /proc/self/fd is the highest listed; the gate's would come after the stdio and inherited files.
      assert.deepEqual(descriptors(held.stdout), descriptors(plain.stdout), `descriptors: ${descriptors(held.stdout).join(' ')}`);
      assert.doesNotMatch(held.stdout, /FFOP_START_GATE_FD|LD_PRELOAD/);
    });

    test('a program that cannot start at all fails as it would without a held start', async () => {
      const start = ProgramStart.ahead(confinement, {
        program: '/usr/bin/no-such-program',
        args: [],
        folder,
        writable: true,
        uid,
        limits: LIMITS,
      });
      assert.equal(await start.ready(), false, 'never loaded');
      const run = await outcomeOf(await start.go());
      assert.notEqual(run.code, 0);
    });
  });
}

describe('start gate set-up', () => {
  test('a confinement without the gate starts programs when they are let go', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'held-start-'));
    try {
      const start = ProgramStart.ahead(new Unconfined(), {
        program: '/bin/sh',
        args: ['-c', 'echo ran'],
        folder,
        writable: true,
        limits: LIMITS,
      });
      assert.equal(start.isHeld, false);
      assert.equal(await start.ready(), false);
      const run = await outcomeOf(await start.go());
      assert.equal(run.stdout, 'ran\n');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  test('a gate library the loader refuses is not used: the self-test finds that ffmpeg did not wait, and says so', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'held-start-setup-'));
    try {
      const notALibrary = join(cacheDir, 'start-gate.so');
      await writeFile(notALibrary, 'not an ELF file\n');
      await chmod(notALibrary, 0o755);
      const said: string[] = [];
      const settings = { unsafe: false, cacheDir, findStartGate: () => notALibrary, log: (line: string) => said.push(line) };
      const unconfined = await setUpUnconfined('unconfined', settings);
      assert.equal(unconfined.holdsStarts, false);
      assert.match(said.join('\n'), /did not wait at the start gate/);
      const t = await testConfinement();
      const bwrap = await setUpConfinement({ ...settings, uids: t.uids });
      assert.equal(bwrap.kind, 'bwrap');
      assert.equal(bwrap.holdsStarts, false);
      assert.equal(said.length, 2);
      // The built library passes the same self-test.
      const built = await setUpConfinement({ ...settings, uids: t.uids, findStartGate: builtLibrary });
      assert.equal(built.holdsStarts, true);
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  });
});
