import { randomUUID } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { accounts, apiKeys, plans } from '../db/schema.ts';
import { generateKey, secretMatches, splitKey } from './api-keys.ts';
import { sharedKeyCache, type KeyCache } from './key-cache.ts';
import { type Plan } from './plans.ts';
import { planOf, PlansRepo } from './plans-repo.ts';

export interface Account {
  id: string;
  name: string;
  plan: Plan;
}

/** Who is calling: the account behind an API key, and the key's environment. */
export interface Caller {
  account: Account;
  environment: string;
  keyId: string;
}

export const ENVIRONMENT_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

export class AccountsRepo {
  private readonly db: Db;
  private readonly keys: KeyCache<Caller>;
  constructor(db: Db) {
    this.db = db;
    this.keys = sharedKeyCache<Caller>(db);
  }

  /** Accounts with their plan's row: plans are read where they are used, so edits apply at once. */
  private withPlan() {
    return this.db.select({ account: accounts, plan: plans }).from(accounts).innerJoin(plans, eq(plans.name, accounts.plan));
  }

  async createAccount(name: string, plan: string): Promise<Account> {
    const p = await new PlansRepo(this.db).require(plan);
    const id = randomUUID();
    await this.db.insert(accounts).values({ id, name, plan: p.name });
    return { id, name, plan: p };
  }

  async getAccount(id: string): Promise<Account | null> {
    const [row] = await this.withPlan().where(eq(accounts.id, id));
    return row ? accountOf(row) : null;
  }

  async findAccountByName(name: string): Promise<Account | null> {
    const [row] = await this.withPlan().where(eq(accounts.name, name));
    return row ? accountOf(row) : null;
  }

  async listAccounts(): Promise<Account[]> {
    return (await this.withPlan().orderBy(accounts.createdAt)).map(accountOf);
  }

  async setPlan(accountId: string, plan: string): Promise<void> {
    const p = await new PlansRepo(this.db).require(plan);
    await this.db.update(accounts).set({ plan: p.name }).where(eq(accounts.id, accountId));
    this.keys.forgetAccount(accountId);
  }

  async createKey(accountId: string, environment: string, label?: string): Promise<{ id: string; key: string }> {
    if (!ENVIRONMENT_NAME.test(environment)) {
      throw new Error(`environment must match ${ENVIRONMENT_NAME} (e.g. main, test, dev)`);
    }
    const key = generateKey();
    await this.db.insert(apiKeys).values({ id: key.id, accountId, environment, secretHash: key.secretHash, label });
    return { id: key.id, key: key.plaintext };
  }

  /** Revokes by key id (the part after "ffo_"); returns false when no active key has that id. */
  async revokeKey(keyId: string, now: Date): Promise<boolean> {
    const rows = await this.db
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id });
    this.keys.forgetKey(keyId);
    return rows.length > 0;
  }

  async listKeys(accountId: string) {
    return this.db
      .select({
        id: apiKeys.id,
        environment: apiKeys.environment,
        label: apiKeys.label,
        createdAt: apiKeys.createdAt,
        revokedAt: apiKeys.revokedAt,
      })
      .from(apiKeys)
      .where(eq(apiKeys.accountId, accountId))
      .orderBy(apiKeys.createdAt);
  }

  async authenticate(plaintext: string): Promise<Caller | null> {
    const cached = this.keys.get(plaintext);
    if (cached) return cached;
    const parts = splitKey(plaintext);
    if (!parts) return null;
    const [row] = await this.db
      .select({ key: apiKeys, account: accounts, plan: plans })
      .from(apiKeys)
      .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
      .innerJoin(plans, eq(plans.name, accounts.plan))
      .where(and(eq(apiKeys.id, parts.id), isNull(apiKeys.revokedAt)));
    if (!row || !secretMatches(parts.secret, row.key.secretHash)) return null;
    const caller: Caller = {
      account: accountOf(row),
      environment: row.key.environment,
      keyId: row.key.id,
    };
    this.keys.set(plaintext, caller, caller.keyId, caller.account.id);
    return caller;
  }
}

function accountOf(row: { account: typeof accounts.$inferSelect; plan: typeof plans.$inferSelect }): Account {
  return { id: row.account.id, name: row.account.name, plan: planOf(row.plan) };
}
