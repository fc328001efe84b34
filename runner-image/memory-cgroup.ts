// The runner's memory cgroup, as a container sees its own: how many processes the kernel's OOM killer
// has killed in it. A pod over its memory limit loses its largest process (ffmpeg) to SIGKILL; this
// count is how the runner tells that apart from any other SIGKILL.
import { readFile } from 'node:fs/promises';

/** Where the count lives: cgroup v1's memory.oom_control, or cgroup v2's memory.events. */
export const OOM_COUNTER_FILES = ['/sys/fs/cgroup/memory/memory.oom_control', '/sys/fs/cgroup/memory.events'];

/** The `oom_kill` count of the first readable file; null where none is readable (not in a container). */
export async function oomKillCount(files: string[] = OOM_COUNTER_FILES): Promise<number | null> {
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    const match = /^oom_kill (\d+)$/m.exec(text);
    if (match) return Number(match[1]);
  }
  return null;
}
