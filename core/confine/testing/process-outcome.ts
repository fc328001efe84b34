// Test helper: what a started process printed and how it ended.
import type { ChildProcess } from 'node:child_process';

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
