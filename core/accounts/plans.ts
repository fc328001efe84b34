// What a plan allows. Plans are rows of the `plans` table (created by an install with
// `npm run cli -- plans create`, changed with `plans set`); the migration that made them rows
// created `free` and `pro`. An account references its plan by name.
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
  /** Queued commands of a higher priority start first (0 to MAX_PRIORITY; the free plan 0, pro 10). */
  priority: number;
}

export const MAX_PRIORITY = 1_000_000;

export type PlanLimits = Omit<Plan, 'name'>;

/** Quotas are given in GB of 10^9 bytes. */
export const GB = 1_000_000_000;

export const PLAN_NAME = /^[a-z0-9-]{1,40}$/;

/** A mistake in what was asked of plans (unknown, duplicate, invalid): shown to the user as is. */
export class PlanError extends Error {}

const INT_MAX = 2_147_483_647; // integer columns
const LIMIT_BOUNDS: Record<Exclude<keyof PlanLimits, 'privateFiles' | 'priority'>, [column: string, max: number]> = {
  maxVcpus: ['max_vcpus', INT_MAX],
  maxCommandRunSeconds: ['max_command_run_seconds', INT_MAX],
  requestsPerMinute: ['requests_per_minute', INT_MAX],
  storageQuotaBytes: ['storage_quota_bytes', Number.MAX_SAFE_INTEGER],
  processingQuotaBytesPerMonth: ['processing_quota_bytes_per_month', Number.MAX_SAFE_INTEGER],
};

export function checkPlanName(name: string): void {
  if (!PLAN_NAME.test(name)) throw new PlanError(`plan name "${name}" must be 1 to 40 of a-z, 0-9 and -`);
}

/** Every limit given must be a positive whole number that fits its column (zero would lock an account out). */
export function checkLimits(limits: Partial<PlanLimits>): void {
  for (const [field, [column, max]] of Object.entries(LIMIT_BOUNDS)) {
    const value = limits[field as keyof typeof LIMIT_BOUNDS];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1 || value > max) {
      throw new PlanError(`${column} must be a whole number from 1 to ${max}, not ${value}`);
    }
  }
  // Zero is a priority like any other: the lowest, and the default.
  if (limits.priority !== undefined && (!Number.isSafeInteger(limits.priority) || limits.priority < 0 || limits.priority > MAX_PRIORITY)) {
    throw new PlanError(`priority must be a whole number from 0 to ${MAX_PRIORITY}, not ${limits.priority}`);
  }
  if (limits.privateFiles !== undefined && typeof limits.privateFiles !== 'boolean') {
    throw new PlanError('private_files must be true or false');
  }
}
