// Resource limits of one confined ffmpeg or ffprobe run, applied with util-linux's prlimit inside the
// sandbox (soft = hard, so the program cannot raise them again).

export interface ProcessLimits {
  /** RLIMIT_AS: address space, so memory (thread stacks and malloc arenas included). */
  memoryBytes: number;
  /** RLIMIT_CPU: CPU seconds summed over all threads; a backstop behind the wall-clock timeout. */
  cpuSeconds: number;
  /** RLIMIT_FSIZE: the largest file it may write (a larger write kills it with SIGXFSZ). */
  fileSizeBytes: number;
  /** RLIMIT_NOFILE: open descriptors. */
  openFiles: number;
  /**
   * RLIMIT_NPROC: processes and threads of its uid. Applied only to a run with a uid of its own (the
   * service runs as root); otherwise it would count every process of the service's user.
   */
  processes: number;
}

/** 4 GiB of address space: enough for 4K H.264/HEVC encodes, far below what takes a machine down. */
export const DEFAULT_MEMORY_BYTES = 4 * 1024 ** 3;
export const DEFAULT_OPEN_FILES = 1024;
export const DEFAULT_PROCESSES = 1024;

/** `prlimit` arguments (without the program); RLIMIT_NPROC only for a run with a uid of its own. */
export function prlimitArgs(limits: ProcessLimits, ownUid: boolean): string[] {
  const args: string[] = [];
  const add = (flag: string, value: number): void => {
    if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`invalid limit ${flag}=${value}`);
    args.push(`${flag}=${value}`);
  };
  add('--as', limits.memoryBytes);
  add('--cpu', limits.cpuSeconds);
  add('--fsize', limits.fileSizeBytes);
  add('--nofile', limits.openFiles);
  if (ownUid) add('--nproc', limits.processes);
  return args;
}
