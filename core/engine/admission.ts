// Which QUEUED commands may start now. FIFO per account: a command that does not fit its account's
// vCPU maximum blocks the account's later commands, so a stream of small commands cannot starve a
// large one. The backend's capacity (embedded mode: the machine's cores) is shared by everyone.
export interface AdmissionCandidate {
  id: string;
  accountId: string;
  vcpuCount: number;
}

export interface AdmissionInput {
  running: AdmissionCandidate[];
  /** In arrival order. */
  queued: AdmissionCandidate[];
  maxVcpusOf: (accountId: string) => number;
  /** null: no shared limit (a cluster scheduler decides). */
  capacityVcpus: number | null;
}

/** vCPUs of the shared capacity these commands hold: 8 vCPUs on 2 cores runs on 2. */
export function sharedVcpus(commands: { vcpuCount: number }[], capacityVcpus: number): number {
  return commands.reduce((sum, command) => sum + Math.min(command.vcpuCount, capacityVcpus), 0);
}

export function admit(input: AdmissionInput): string[] {
  const { capacityVcpus } = input;
  // A command never needs more of the shared capacity than exists.
  const capacityShare = (vcpus: number) => (capacityVcpus === null ? 0 : Math.min(vcpus, capacityVcpus));
  const usedByAccount = new Map<string, number>();
  let capacityUsed = 0;
  for (const command of input.running) {
    usedByAccount.set(command.accountId, (usedByAccount.get(command.accountId) ?? 0) + command.vcpuCount);
    capacityUsed += capacityShare(command.vcpuCount);
  }
  const blocked = new Set<string>();
  const admitted: string[] = [];
  for (const command of input.queued) {
    if (blocked.has(command.accountId)) continue;
    const used = usedByAccount.get(command.accountId) ?? 0;
    if (used + command.vcpuCount > input.maxVcpusOf(command.accountId)) {
      blocked.add(command.accountId);
      continue;
    }
    if (capacityVcpus !== null && capacityUsed + capacityShare(command.vcpuCount) > capacityVcpus) {
      break; // the oldest waiting command gets the next free capacity, whoever owns it
    }
    usedByAccount.set(command.accountId, used + command.vcpuCount);
    capacityUsed += capacityShare(command.vcpuCount);
    admitted.push(command.id);
  }
  return admitted;
}
