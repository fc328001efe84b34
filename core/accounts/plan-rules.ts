// The rules an account's plan sets, each stated once, with the words of its refusal next to it.
// Each limit is one comparison (a Limit): the code calls it where the code decides (a submit, a file
// to store), and the statements that decide in the database build it as SQL from the same definition
// (admission: CommandsRepo.admissible and overPlan; a new command's quotas: CommandsRepo.insert). A
// refusal at the API is a PlanRefusal, answered 403 with its message (api/app/create-app.ts); a queued command
// a rule refuses later ends FAILED with the message worded here.
import { sql, type SQL } from 'drizzle-orm';
import type { QuotaUsage } from '../files/files-repo.ts';
import { PlanRefusal } from './plan-refusal.ts';
import type { Plan } from './plans.ts';

/** One comparison, `amount <= limit` or `amount < limit`, for the code (allows) and for SQL (allowsSql). */
export class Limit {
  static readonly atMost = new Limit('<=');
  static readonly below = new Limit('<');
  private readonly op: '<=' | '<';
  private constructor(op: '<=' | '<') {
    this.op = op;
  }

  allows(amount: number, limit: number): boolean {
    return this.op === '<=' ? amount <= limit : amount < limit;
  }

  allowsSql(amount: SQL, limit: SQL): SQL {
    return sql`(${amount}) ${sql.raw(this.op)} (${limit})`;
  }
}

type PlanWith<K extends keyof Plan> = Pick<Plan, 'name' | K>;

const GB = 1_000_000_000;
const gb = (bytes: number) => `${(bytes / GB).toFixed(3)} GB`;

// vCPUs --------------------------------------------------------------------------------------------

/**
 * The vCPUs an account runs at once, counting the command in question, are at most its plan's
 * max_vcpus. Admission counts what the account runs plus its queued commands up to this one; a submit
 * and the sweep of the queue count the command alone (more than that could never run).
 */
export const VCPUS = Limit.atMost;

/** A submit asking more vCPUs than the plan allows: 403. */
export function checkVcpus(plan: PlanWith<'maxVcpus'>, vcpus: number): void {
  if (!VCPUS.allows(vcpus, plan.maxVcpus)) {
    throw new PlanRefusal(`vcpu_count ${vcpus} exceeds the maximum of ${plan.maxVcpus} vCPUs of your plan (${plan.name})`);
  }
}

/** The error_message of a queued command over its plan, lowered since its submit (PLAN_LIMIT_EXCEEDED). */
export function vcpusOverPlanNow(vcpus: number, maxVcpus: number): string {
  return `vcpu_count ${vcpus} is more than the ${maxVcpus} vCPUs the account's plan allows now`;
}

// Run time -----------------------------------------------------------------------------------------

/** A command's max_command_run_seconds is at most its plan's. */
export const RUN_SECONDS = Limit.atMost;

/** A submit asking a longer run than the plan allows: 403. */
export function checkRunSeconds(plan: PlanWith<'maxCommandRunSeconds'>, seconds: number): void {
  if (!RUN_SECONDS.allows(seconds, plan.maxCommandRunSeconds)) {
    throw new PlanRefusal(
      `max_command_run_seconds ${seconds} exceeds the maximum of ${plan.maxCommandRunSeconds} s of your plan (${plan.name})`,
    );
  }
}

// Private files ------------------------------------------------------------------------------------

/** is_private needs a plan with private files: 403. */
export function checkPrivateFiles(plan: PlanWith<'privateFiles'>, isPrivate: boolean): void {
  if (isPrivate && !plan.privateFiles) throw new PlanRefusal(`private files (is_private) are not available on your plan (${plan.name})`);
}

// Storage ------------------------------------------------------------------------------------------

/**
 * The bytes an account stores (live files, and announced sizes of uploads in progress) are below its
 * plan's storage quota for it to store anything new: a file, an upload, a command's outputs.
 */
export const STORAGE_ROOM = Limit.below;
/** And what it stores plus the bytes it adds, when their number is known, are at most the quota. */
export const STORAGE_FIT = Limit.atMost;

/** A new file or upload of `adding` bytes (undefined: not known yet) the storage quota refuses: 403. */
export function checkStorage(plan: PlanWith<'storageQuotaBytes'>, stored: number, adding?: number): void {
  const quota = plan.storageQuotaBytes;
  if (!STORAGE_ROOM.allows(stored, quota) || (adding !== undefined && !STORAGE_FIT.allows(stored + adding, quota))) {
    throw storageRefusal(plan, stored, adding);
  }
}

/** A file fetched from a URL that does not fit the storage quota: the error_message it fails with (STORAGE_QUOTA_EXCEEDED). */
export function fileOverStorageQuota(plan: PlanWith<'storageQuotaBytes'>, stored: number, size: number): string | null {
  if (STORAGE_FIT.allows(stored + size, plan.storageQuotaBytes)) return null;
  return `the file (${size} bytes) would exceed the storage quota of your plan (${plan.name})`;
}

function storageRefusal(plan: PlanWith<'storageQuotaBytes'>, stored: number, adding?: number): PlanRefusal {
  return new PlanRefusal(
    `storage quota exceeded: ${gb(stored)} used${adding ? ` + ${gb(adding)} requested` : ''} of ${gb(plan.storageQuotaBytes)} ` +
      `on your plan (${plan.name}); delete files to make room`,
  );
}

// Processing ---------------------------------------------------------------------------------------

/**
 * The bytes an account's commands created this month (UTC) processed are below its plan's monthly
 * processing quota for a new command to be stored (what it will process is not known yet).
 */
export const PROCESSING_ROOM = Limit.below;

// A new command: processing and storage, decided by the statement that stores it ------------------

export type NewCommandLimits = Pick<Plan, 'storageQuotaBytes' | 'processingQuotaBytesPerMonth'>;

/**
 * The two quotas a new command needs, as the columns `processing_room` and `storage_room` of a select
 * from a row of `stored` and `processed` (quotaUsageSql).
 */
export function newCommandRoomSql(limits: NewCommandLimits): SQL {
  const processing = PROCESSING_ROOM.allowsSql(sql`processed`, sql`${limits.processingQuotaBytesPerMonth}::float8`);
  const storage = STORAGE_ROOM.allowsSql(sql`stored`, sql`${limits.storageQuotaBytes}::float8`);
  return sql`${processing} as processing_room, ${storage} as storage_room`;
}

/** What the statement that stores a new command decided about its quotas, and the usage it read. */
export interface NewCommandRoom {
  processingRoom: boolean;
  storageRoom: boolean;
  usage: QuotaUsage;
}

/** The refusal of a new command that statement did not store, worded from its decision (processing first): 403. */
export function newCommandRefusal(plan: PlanWith<'storageQuotaBytes' | 'processingQuotaBytesPerMonth'>, room: NewCommandRoom): PlanRefusal {
  if (!room.processingRoom) {
    const { processedBytes } = room.usage;
    return new PlanRefusal(
      `processing quota exceeded: ${gb(processedBytes)} processed this month of ${gb(plan.processingQuotaBytesPerMonth)} ` +
        `on your plan (${plan.name})`,
    );
  }
  return storageRefusal(plan, room.usage.storedBytes);
}
