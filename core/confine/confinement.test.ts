// Attack tests of the sandbox itself, on this host's real bubblewrap and seccomp program: each one
// tries to reach outside the run's folder and checks that it cannot.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BwrapConfinement, spawnPrepared, Unconfined, type Confinement } from './confinement.ts';
import { handOver } from './hand-over.ts';
import type { ProcessLimits } from './limits.ts';
import { outcomeOf, type Outcome } from './testing/process-outcome.ts';
import { testConfinement } from './testing/test-confinement.ts';

const LIMITS: ProcessLimits = {
  memoryBytes: 2 * 1024 ** 3,
  cpuSeconds: 60,
  fileSizeBytes: 100 * 1024 ** 2,
  openFiles: 256,
  processes: 256,
};

async function run(
  confinement: Confinement,
  folder: string,
  uid: number | undefined,
  program: string,
  args: string[],
  limits: Partial<ProcessLimits> = {},
): Promise<Outcome> {
  const command = confinement.prepare({ program, args, folder, writable: true, uid, limits: { ...LIMITS, ...limits } });
  return outcomeOf(spawnPrepared(command));
}

/** `pid` and every process under it, from /proc. */
function processTree(pid: number): number[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return [pid, ...children.flatMap(processTree)];
}

/** From /proc/PID/stat: its name, session and controlling terminal (0: none). */
function processInfo(pid: number): { name: string; session: number; tty: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), session: Number(fields[3]), tty: Number(fields[4]) };
}

describe('bubblewrap confinement', () => {
  let root: string;
  let folder: string;
  let canaryDir: string;
  let confinement: Confinement;
  let uid: number | undefined;
  const sh = (script: string, limits: Partial<ProcessLimits> = {}) => run(confinement, folder, uid, '/bin/sh', ['-c', script], limits);

  before(async () => {
    const t = await testConfinement();
    confinement = t.confinement;
    uid = t.uids?.acquire();
    root = await mkdtemp(join(tmpdir(), 'confine-test-'));
    await chmod(root, 0o755);
    folder = join(root, 'work');
    await mkdir(folder);
    await writeFile(join(folder, 'mine.txt'), 'my own input\n');
    if (uid !== undefined) await handOver(folder, uid);
    // Canaries outside the folder: one anyone may read, one only its owner may.
    canaryDir = join(root, 'canaries');
    await mkdir(canaryDir, { mode: 0o755 });
    await writeFile(join(canaryDir, 'public.txt'), 'PUBLIC-CANARY\n', { mode: 0o644 });
    await writeFile(join(canaryDir, 'private.txt'), 'PRIVATE-CANARY\n', { mode: 0o600 });
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('a control run without confinement does read the canaries (so the tests below can fail)', async () => {
    const plain = await run(new Unconfined(), folder, undefined, '/bin/sh', ['-c', `cat ${canaryDir}/public.txt ${canaryDir}/private.txt`]);
    assert.match(plain.stdout, /PUBLIC-CANARY[\s\S]*PRIVATE-CANARY/);
  });

  test('it sees its own folder and read-only system paths, nothing else', async () => {
    const out = await sh(
      `cat mine.txt; ls /; cat ${canaryDir}/public.txt ${canaryDir}/private.txt; echo x > /usr/evil; ` +
        'echo made > out.txt; ln -s /etc/shadow link.txt; ln mine.txt hard.txt',
    );
    assert.match(out.stdout, /my own input/);
    const top = out.stdout
      .split('\n')
      .slice(1)
      .filter((l) => /^[a-z0-9]+$/.test(l));
    assert.deepEqual(
      top.filter(
        (name) => !['bin', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'libx32', 'proc', 'sbin', 'tmp', 'usr', 'var', 'work'].includes(name),
      ),
      [],
    );
    assert.doesNotMatch(out.stdout, /CANARY/);
    assert.match(out.stderr, /No such file or directory/);
    assert.match(out.stderr, /Read-only file system|Permission denied/);
    assert.equal((await stat(join(folder, 'out.txt'))).size, 5);
    // No links: the service reads the folder afterwards, outside the sandbox.
    await assert.rejects(lstat(join(folder, 'link.txt')), /ENOENT/);
    await assert.rejects(lstat(join(folder, 'hard.txt')), /ENOENT/);
  });

  test('its /proc shows its own processes only: no other process, its cwd or environment', async () => {
    const hostPid = process.pid;
    const out = await sh(
      `ls /proc | grep -c '^[0-9]'; cat /proc/${hostPid}/environ; ls /proc/${hostPid}/cwd/; cat /proc/1/cmdline | tr '\\0' ' '`,
    );
    const count = Number(out.stdout.split('\n')[0]);
    assert.ok(count <= 4, `sees ${count} processes`);
    assert.doesNotMatch(out.stdout, /FFOP_|PATH=/);
    assert.doesNotMatch(out.stdout, /node/);
  });

  test('no network: a loopback listener outside cannot be reached', async () => {
    let connections = 0;
    const server = createServer((s) => {
      connections++;
      s.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const out = await run(confinement, folder, uid, '/usr/bin/python3', [
        '-c',
        `import socket\ntry:\n  socket.create_connection(('127.0.0.1', ${port}), timeout=3); print('connected')\n` +
          "except OSError as e:\n  print('refused', e)",
      ]);
      assert.match(out.stdout, /refused/);
      // Control: the same program unconfined connects.
      const plain = await run(new Unconfined(), folder, undefined, '/usr/bin/python3', [
        '-c',
        `import socket; socket.create_connection(('127.0.0.1', ${port}), timeout=3); print('connected')`,
      ]);
      assert.match(plain.stdout, /connected/);
      assert.equal(connections, 1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('no privileges: its own uid as root, no capabilities, no_new_privs, the seccomp filter', async () => {
    const out = await sh('id -u; grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status; unshare --user true && echo UNSHARED');
    const lines = out.stdout.split('\n');
    if (uid !== undefined) assert.equal(lines[0], String(uid));
    assert.match(out.stdout, /CapEff:\s+0+\n/);
    assert.match(out.stdout, /NoNewPrivs:\s+1/);
    assert.match(out.stdout, /Seccomp:\s+2/);
    assert.doesNotMatch(out.stdout, /UNSHARED/);
    assert.match(out.stderr, /Operation not permitted/);
  });

  test('the memory limit stops a decompression bomb: a small PNG of 12000x12000 pixels', { timeout: 120_000 }, async () => {
    const make = await run(confinement, folder, uid, 'ffmpeg', [
      '-nostdin',
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=c=black:s=12000x12000',
      '-frames:v',
      '1',
      '-y',
      'bomb.png',
    ]);
    assert.equal(make.code, 0, make.stderr);
    assert.ok((await stat(join(folder, 'bomb.png'))).size < 1024 ** 2);
    const decode = ['-nostdin', '-v', 'error', '-i', 'bomb.png', '-f', 'null', '-'];
    const limited = await run(confinement, folder, uid, 'ffmpeg', decode, { memoryBytes: 512 * 1024 ** 2 });
    assert.notEqual(limited.code, 0);
    assert.match(limited.stderr, /Cannot allocate memory/);
    // Control: with room enough the same decode works.
    const roomy = await run(confinement, folder, uid, 'ffmpeg', decode, { memoryBytes: 3 * 1024 ** 3 });
    assert.equal(roomy.code, 0, roomy.stderr);
  });

  test(
    'where no procfs may be mounted (a container), the sandbox has no /proc at all and ffmpeg still works',
    { timeout: 60_000 },
    async () => {
      assert.ok(confinement instanceof BwrapConfinement);
      const noProc = new BwrapConfinement({ seccompProgram: confinement.seccompProgram, asRoot: uid !== undefined, mountProc: false });
      const out = await run(noProc, folder, uid, '/bin/sh', [
        '-c',
        `ls /proc; cat /proc/1/environ; ffmpeg -v error -f lavfi -i testsrc=d=0.2:s=64x48 -y noproc.mp4 && echo ENCODED`,
      ]);
      assert.match(out.stderr, /cannot access '\/proc': No such file or directory/);
      assert.match(out.stdout, /ENCODED/);
      assert.doesNotMatch(out.stdout, /PATH=/);
    },
  );

  test('a session of its own: no controlling terminal, ranked at the niceness it was started with', { timeout: 30_000 }, async () => {
    const script = 'cat /dev/tty; echo ready; exec sleep 30';
    const command = confinement.prepare({ program: '/bin/sh', args: ['-c', script], folder, writable: true, uid, limits: LIMITS });
    const child = spawnPrepared(command, 10);
    try {
      let stderr = '';
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      await new Promise<void>((resolve) => child.stdout!.on('data', (c: Buffer) => c.toString().includes('ready') && resolve()));
      await new Promise((r) => setTimeout(r, 100)); // the exec into sleep
      assert.match(stderr, /No such device or address/, 'no terminal to write into');
      const tree = processTree(child.pid!).map((pid) => ({ pid, ...processInfo(pid) }));
      const sleeper = tree.find((p) => p.name === 'sleep');
      assert.ok(sleeper, JSON.stringify(tree));
      for (const p of tree) assert.deepEqual([p.session, p.tty], [child.pid, 0], `${p.name} (${p.pid})`);
      assert.notEqual(processInfo(process.pid).session, child.pid);
      // Without autogroup scheduling the nice values rank processes directly (tested in session-priority.test.ts).
      if (existsSync('/proc/self/autogroup')) {
        assert.match(readFileSync(`/proc/${sleeper.pid}/autogroup`, 'utf8'), / nice 10\n$/);
      }
    } finally {
      process.kill(-child.pid!, 'SIGKILL');
    }
  });

  test('a process it leaves behind dies with it', { timeout: 60_000 }, async () => {
    await sh('sleep 987654 & echo started');
    await new Promise((r) => setTimeout(r, 300));
    const left = (() => {
      try {
        return execFileSync('pgrep', ['-f', 'sleep 987654'], { encoding: 'utf8' });
      } catch {
        return '';
      }
    })();
    assert.equal(left.trim(), '');
  });
});
