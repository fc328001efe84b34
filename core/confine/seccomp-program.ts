// The compiled seccomp filter (a BPF program) that bubblewrap loads for every confined run. It is
// generated with libseccomp (Debian's python3-seccomp, through seccomp-filter.py) once, cached by the
// script's content, and opened afresh for each run (bwrap reads it from a descriptor to its end).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { arch } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./seccomp-filter.py', import.meta.url));
/** Debian's python3, which has the seccomp module (a pyenv or venv python may not). */
const PYTHON = '/usr/bin/python3';

/**
 * Path of the BPF program, generating it into `cacheDir` when missing. `prebuilt` (an image ships one)
 * is used as it is.
 */
export async function ensureSeccompProgram(cacheDir: string, prebuilt?: string): Promise<string> {
  if (prebuilt) {
    await stat(prebuilt).catch(() => {
      throw new Error(`the seccomp program ${prebuilt} (FFOP_SECCOMP_PROGRAM) does not exist`);
    });
    return prebuilt;
  }
  const source = await readFile(SCRIPT);
  const version = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const path = join(cacheDir, `seccomp-${arch()}-${version}.bpf`);
  if (
    await stat(path).then(
      (s) => s.size > 0,
      () => false,
    )
  )
    return path;
  const program = await generate();
  await mkdir(cacheDir, { recursive: true, mode: 0o700 });
  const partial = `${path}.${process.pid}.tmp`;
  await writeFile(partial, program, { mode: 0o644 });
  await rename(partial, path); // concurrent generators write the same bytes; the last rename wins
  return path;
}

function generate(): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(PYTHON, [SCRIPT], { encoding: 'buffer', timeout: 20_000, env: { PATH: '/usr/bin:/bin' } }, (err, stdout, stderr) => {
      if (err) {
        const why = stderr.toString('utf8').trim().split('\n').pop() || err.message;
        reject(new Error(`cannot generate the seccomp filter with ${PYTHON} and python3-seccomp: ${why}`));
      } else if (stdout.length === 0 || stdout.length % 8 !== 0) {
        reject(new Error('the seccomp filter generator wrote no BPF program'));
      } else resolve(stdout);
    });
  });
}
