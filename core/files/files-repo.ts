// Stored files: command outputs, files stored from a URL, direct uploads. Reads a client can trigger
// are scoped by account, so another account's ids behave exactly like unknown ones.
import { and, desc, eq, inArray, lt, ne, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { inFlightRows } from '../db/in-flight-rows.ts';
import { rowsOf } from '../db/migrate.ts';
import { accountStorage, files } from '../db/schema.ts';
import { FileStatus, StoreType } from './file-status.ts';

export type FileRow = typeof files.$inferSelect;
export type NewFileRow = typeof files.$inferInsert;

export class FilesRepo {
  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  async insert(row: NewFileRow): Promise<void> {
    await this.db.insert(files).values(row);
  }

  async findForAccount(accountId: string, id: string): Promise<FileRow | null> {
    const [row] = await this.db
      .select()
      .from(files)
      .where(and(eq(files.id, id), eq(files.accountId, accountId)));
    return row ?? null;
  }

  async findById(id: string): Promise<FileRow | null> {
    const [row] = await this.db.select().from(files).where(eq(files.id, id));
    return row ?? null;
  }

  /** Command outputs and stored files, newest first; no deleted files, no inputs. */
  async listForAccount(accountId: string, limit: number, offset: number): Promise<FileRow[]> {
    return this.db
      .select()
      .from(files)
      .where(and(eq(files.accountId, accountId), eq(files.isDeleted, false), ne(files.serviceStoreType, StoreType.INPUT)))
      .orderBy(desc(files.createdAt), desc(files.id))
      .limit(limit)
      .offset(offset);
  }

  async update(id: string, patch: Partial<NewFileRow>): Promise<void> {
    await this.db
      .update(files)
      .set({ ...patch, updatedAt: new Date() })
      .where(eq(files.id, id));
  }

  /**
   * Moves a live file from one status to another only if it is still in `from`; false when someone
   * else moved it first (a concurrent complete and abort, say) or deleted it meanwhile.
   */
  async transition(id: string, from: FileStatus, patch: Partial<NewFileRow>): Promise<boolean> {
    const rows = await this.db
      .update(files)
      .set({ ...patch, updatedAt: new Date() })
      .where(and(eq(files.id, id), eq(files.status, from), eq(files.isDeleted, false)))
      .returning({ id: files.id });
    return rows.length > 0;
  }

  /** Marks live files deleted; returns the ids that were deleted by this call. */
  async markDeleted(accountId: string, ids: string[]): Promise<FileRow[]> {
    if (ids.length === 0) return [];
    return this.db
      .update(files)
      .set({ isDeleted: true, updatedAt: new Date() })
      .where(and(eq(files.accountId, accountId), inArray(files.id, ids), eq(files.isDeleted, false)))
      .returning();
  }

  /**
   * Files the background tasks must act on, oldest first: store-file requests not yet downloaded and
   * completed uploads not yet probed. Open uploads and deleted files are not work, so however many of
   * them there are, they never crowd real work out of the batch.
   */
  /**
   * Files waiting for a download or a probe, up to `limit`, taking turns across accounts: each
   * account's oldest first, and the attempts it has in flight (`inFlight`, by account id) count as
   * turns taken, so one account's hundreds of queued files do not push another's back. Accounts with
   * `perAccount` files in flight are left out.
   */
  async pendingWork(limit = 100, inFlight: ReadonlyMap<string, number> = new Map(), perAccount = Infinity): Promise<FileRow[]> {
    const full = [...inFlight].filter(([, n]) => n >= perAccount).map(([id]) => sql`${id}::uuid`);
    const ids = rowsOf<{ id: string }>(
      await this.db.execute(sql`
        with busy as (${inFlightRows(inFlight)}), waiting as (
          select f.id, f.created_at,
            row_number() over (partition by f.account_id order by f.created_at, f.id) + coalesce(b.n, 0) as turn
          from files f left join busy b on b.key = f.account_id::text
          where f.is_deleted = false and ((f.status = 'QUEUED' and f.upload_id is null) or f.status = 'UPLOADED')
            ${full.length > 0 ? sql`and f.account_id not in (${sql.join(full, sql`, `)})` : sql``}
        )
        select id from waiting order by turn, created_at, id limit ${limit}`),
    ).map((r) => r.id);
    if (ids.length === 0) return [];
    const rows = await this.db.select().from(files).where(inArray(files.id, ids));
    const order = new Map(ids.map((id, i) => [id, i]));
    return rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }

  async withStatus(statuses: FileStatus[], limit = 100): Promise<FileRow[]> {
    return this.db.select().from(files).where(inArray(files.status, statuses)).orderBy(files.createdAt).limit(limit);
  }

  /** Uploads still waiting for complete/abort since before `olderThan`. */
  async staleUploads(olderThan: Date, uploadStatus: FileStatus): Promise<FileRow[]> {
    return this.db
      .select()
      .from(files)
      .where(and(eq(files.status, uploadStatus), lt(files.createdAt, olderThan), sql`${files.uploadId} is not null`));
  }

  /**
   * Bytes the account keeps in storage: live files, plus announced sizes of uploads in progress (a
   * running sum kept by a trigger, migration 0006).
   */
  async storageUsedBytes(accountId: string): Promise<number> {
    const [row] = await this.db
      .select({ bytes: accountStorage.storedBytes })
      .from(accountStorage)
      .where(eq(accountStorage.accountId, accountId));
    return Number(row?.bytes ?? 0);
  }
}

/** The two figures the quotas limit: bytes an account stores, and bytes its commands of a month processed. */
export interface QuotaUsage {
  storedBytes: number;
  processedBytes: number;
}

/**
 * Both quota figures of an account in one row (`stored`, `processed`): bytes it stores (live files, plus
 * announced sizes of uploads in progress) and bytes its commands created in `month` processed (its
 * first day, yyyy-mm-dd). Running sums kept by triggers (migration 0006). New commands check them in
 * the statement that stores them (CommandsRepo.insert).
 */
export function quotaUsageSql(accountId: string, month: string): SQL {
  return sql`select
    coalesce((select stored_bytes from account_storage where account_id = ${accountId}), 0)::float8 as stored,
    coalesce((select processed_bytes from account_monthly_processing where account_id = ${accountId} and month = ${month}::date), 0)::float8 as processed`;
}
