// Which admissible QUEUED commands start now. The database has already kept each account within its
// plan, first in first out, so a stream of small commands cannot starve a large one
// (CommandsRepo.admissible). What is left is the backend's capacity (embedded mode: the machine's
// cores), shared by everyone: the oldest waiting command gets the next free capacity, whoever owns it.

/** vCPUs of the shared capacity these commands hold: 8 vCPUs on 2 cores runs on 2. */
export function sharedVcpus(commands: { vcpuCount: number }[], capacityVcpus: number): number {
  return commands.reduce((sum, command) => sum + Math.min(command.vcpuCount, capacityVcpus), 0);
}

/**
 * The ids of `queued` (oldest first) that fit next to `running`, stopping at the first that does not;
 * all of them when there is no shared capacity (null: a cluster's scheduler decides).
 */
export function admitToCapacity(
  running: { vcpuCount: number }[],
  queued: { id: string; vcpuCount: number }[],
  capacityVcpus: number | null,
): string[] {
  if (capacityVcpus === null) return queued.map((command) => command.id);
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
