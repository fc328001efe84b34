// Test helpers: what a started process printed and how it ended, and whether a process is gone.
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';

export interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Collects the child's stdout and stderr until it closes; its exit code (null: killed by a signal). */
export async function outcomeOf(child: ChildProcess): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  return { code, stdout, stderr };
}

/** Gone: no such process, or a zombie left for its parent to reap (it can no longer run). */
export async function isGone(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat === '' || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
}
