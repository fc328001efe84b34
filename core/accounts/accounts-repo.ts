import { randomUUID } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { accounts, apiKeys } from '../db/schema.ts';
import { generateKey, secretMatches, splitKey } from './api-keys.ts';
import { KeyCache } from './key-cache.ts';
import { planNamed, type Plan } from './plans.ts';

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

const ENVIRONMENT_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/** One cache per database, whichever repo instance authenticates or revokes. */
const cachesByDb = new WeakMap<Db, KeyCache<Caller>>();

export class AccountsRepo {
  private readonly db: Db;
  private readonly keys: KeyCache<Caller>;
  constructor(db: Db) {
    this.db = db;
    let cache = cachesByDb.get(db);
    if (cache === undefined) {
      cache = new KeyCache<Caller>();
      cachesByDb.set(db, cache);
    }
    this.keys = cache;
  }

  async createAccount(name: string, plan: string): Promise<Account> {
    const p = planNamed(plan);
    const id = randomUUID();
    await this.db.insert(accounts).values({ id, name, plan: p.name });
    return { id, name, plan: p };
  }

  async getAccount(id: string): Promise<Account | null> {
    const [row] = await this.db.select().from(accounts).where(eq(accounts.id, id));
    return row ? { id: row.id, name: row.name, plan: planNamed(row.plan) } : null;
  }

  async findAccountByName(name: string): Promise<Account | null> {
    const [row] = await this.db.select().from(accounts).where(eq(accounts.name, name));
    return row ? { id: row.id, name: row.name, plan: planNamed(row.plan) } : null;
  }

  async listAccounts(): Promise<Account[]> {
    const rows = await this.db.select().from(accounts).orderBy(accounts.createdAt);
    return rows.map((r) => ({ id: r.id, name: r.name, plan: planNamed(r.plan) }));
  }

  async setPlan(accountId: string, plan: string): Promise<void> {
    await this.db.update(accounts).set({ plan: planNamed(plan).name }).where(eq(accounts.id, accountId));
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
      .select({ id: apiKeys.id, environment: apiKeys.environment, label: apiKeys.label, createdAt: apiKeys.createdAt, revokedAt: apiKeys.revokedAt })
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
      .select({ key: apiKeys, account: accounts })
      .from(apiKeys)
      .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
      .where(and(eq(apiKeys.id, parts.id), isNull(apiKeys.revokedAt)));
    if (!row || !secretMatches(parts.secret, row.key.secretHash)) return null;
    const caller: Caller = {
      account: { id: row.account.id, name: row.account.name, plan: planNamed(row.account.plan) },
      environment: row.key.environment,
      keyId: row.key.id,
    };
    this.keys.set(plaintext, caller, caller.keyId, caller.account.id);
    return caller;
  }
}
