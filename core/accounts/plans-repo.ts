// Plans in the database: listed, created and changed by the CLI, read (through accounts) on every
// authenticated request and by admission.
import { asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { plans } from '../db/schema.ts';
import { sharedKeyCache } from './key-cache.ts';
import { checkLimits, checkPlanName, PlanError, type Plan, type PlanLimits } from './plans.ts';

export function planOf(row: typeof plans.$inferSelect): Plan {
  return {
    name: row.name,
    maxVcpus: row.maxVcpus,
    maxCommandRunSeconds: row.maxCommandRunSeconds,
    privateFiles: row.privateFiles,
    storageQuotaBytes: row.storageQuotaBytes,
    processingQuotaBytesPerMonth: row.processingQuotaBytesPerMonth,
    requestsPerMinute: row.requestsPerMinute,
    priority: row.priority,
  };
}

export class PlansRepo {
  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  async list(): Promise<Plan[]> {
    return (await this.db.select().from(plans).orderBy(asc(plans.createdAt), asc(plans.name))).map(planOf);
  }

  async get(name: string): Promise<Plan | null> {
    const [row] = await this.db.select().from(plans).where(eq(plans.name, name));
    return row ? planOf(row) : null;
  }

  /** The plan, or a PlanError that lists the known ones. */
  async require(name: string): Promise<Plan> {
    return (await this.get(name)) ?? (await this.unknown(name));
  }

  /** A plan created without a priority gets the lowest (0). */
  async create(given: Omit<Plan, 'priority'> & { priority?: number }): Promise<Plan> {
    const plan: Plan = { ...given, priority: given.priority ?? 0 };
    checkPlanName(plan.name);
    checkLimits(plan);
    const rows = await this.db.insert(plans).values(plan).onConflictDoNothing().returning();
    if (rows.length === 0) throw new PlanError(`plan "${plan.name}" already exists (change it with plans set)`);
    return planOf(rows[0]);
  }

  /** Changes some limits; callers cached with this plan see the change on their next request. */
  async update(name: string, changes: Partial<PlanLimits>): Promise<Plan> {
    checkLimits(changes);
    if (Object.keys(changes).length === 0) throw new PlanError('nothing to change: give at least one limit');
    const rows = await this.db
      .update(plans)
      .set({ ...changes, updatedAt: sql`now()` })
      .where(eq(plans.name, name))
      .returning();
    if (rows.length === 0) return this.unknown(name);
    sharedKeyCache(this.db).forgetAll();
    return planOf(rows[0]);
  }

  private async unknown(name: string): Promise<never> {
    const known = (await this.list()).map((p) => p.name);
    throw new PlanError(`unknown plan "${name}" (known: ${known.join(', ')})`);
  }
}
