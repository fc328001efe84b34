// What each plan allows. A plan is chosen per account (CLI: `accounts create --plan`).
export interface Plan {
  name: string;
  /** Sum of vcpu_count over an account's running commands. */
  maxVcpus: number;
  maxCommandRunSeconds: number;
  privateFiles: boolean;
}

export const PLANS: Record<string, Plan> = {
  free: { name: 'free', maxVcpus: 4, maxCommandRunSeconds: 300, privateFiles: false },
  pro: { name: 'pro', maxVcpus: 32, maxCommandRunSeconds: 3600, privateFiles: true },
};

export function planNamed(name: string): Plan {
  const plan = PLANS[name];
  if (!plan) throw new Error(`unknown plan "${name}" (known: ${Object.keys(PLANS).join(', ')})`);
  return plan;
}
