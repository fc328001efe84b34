// Which admissible QUEUED commands start now. The database has already kept each account within its
// plan, first in first out, so a stream of small commands cannot starve a large one
// (CommandsRepo.admissible). What is left is the backend's capacity (embedded mode: the machine's
// cores), shared by everyone: the oldest waiting command gets the next free capacity, whoever owns it.
//
// The shared capacity is for ffmpeg. A command whose last step has finished ffmpeg and only probes and
// stores its outputs (UPLOADING) frees its share for the next command, so the cores do not wait on
// ffprobe starting and on storage. At most one such finishing command per vCPU of the capacity: if
// storing is slower than ffmpeg, admission waits instead of piling up runners.

export interface RunningCommand {
  vcpuCount: number;
  /** Its last step is past ffmpeg (UPLOADING). */
  finishing: boolean;
}

/** vCPUs of the shared capacity these commands hold: 8 vCPUs on 2 cores runs on 2; finishing commands hold none. */
export function sharedVcpus(commands: RunningCommand[], capacityVcpus: number): number {
  return commands.reduce((sum, command) => sum + (command.finishing ? 0 : Math.min(command.vcpuCount, capacityVcpus)), 0);
}

/** Nothing more can start next to `running`. */
export function capacityTaken(running: RunningCommand[], capacityVcpus: number): boolean {
  return sharedVcpus(running, capacityVcpus) >= capacityVcpus || running.filter((c) => c.finishing).length >= capacityVcpus;
}

/**
 * The ids of `queued` (oldest first) that fit next to `running`, stopping at the first that does not;
 * all of them when there is no shared capacity (null: a cluster's scheduler decides).
 */
export function admitToCapacity(
  running: RunningCommand[],
  queued: { id: string; vcpuCount: number }[],
  capacityVcpus: number | null,
): string[] {
  if (capacityVcpus === null) return queued.map((command) => command.id);
  if (capacityTaken(running, capacityVcpus)) return [];
  let used = sharedVcpus(running, capacityVcpus);
  const admitted: string[] = [];
  for (const command of queued) {
    // A command never needs more of the shared capacity than exists.
    const share = Math.min(command.vcpuCount, capacityVcpus);
    if (used + share > capacityVcpus) break;
    used += share;
    admitted.push(command.id);
  }
  return admitted;
}
