// What each plan allows. A plan is chosen per account (CLI: `accounts create --plan`).
export interface Plan {
  name: string;
  /** Sum of vcpu_count over an account's running commands. */
  maxVcpus: number;
  maxCommandRunSeconds: number;
  privateFiles: boolean;
  /** Bytes of live (not deleted) stored files: command outputs, stored and uploaded files. */
  storageQuotaBytes: number;
  /** Bytes downloaded and produced by commands, per calendar month (UTC). */
  processingQuotaBytesPerMonth: number;
  /** Requests per minute per API key. */
  requestsPerMinute: number;
}

const GB = 1_000_000_000;

export const PLANS: Record<string, Plan> = {
  free: {
    name: 'free',
    maxVcpus: 4,
    maxCommandRunSeconds: 300,
    privateFiles: false,
    storageQuotaBytes: 5 * GB,
    processingQuotaBytesPerMonth: 20 * GB,
    requestsPerMinute: 120,
  },
  pro: {
    name: 'pro',
    maxVcpus: 32,
    maxCommandRunSeconds: 3600,
    privateFiles: true,
    storageQuotaBytes: 10_000 * GB,
    processingQuotaBytesPerMonth: 100_000 * GB,
    requestsPerMinute: 1200,
  },
};

export function planNamed(name: string): Plan {
  const plan = PLANS[name];
  if (!plan) throw new Error(`unknown plan "${name}" (known: ${Object.keys(PLANS).join(', ')})`);
  return plan;
}
