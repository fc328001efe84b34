// Stored files: command outputs, files stored from a URL, direct uploads. Reads a client can trigger
// are scoped by account, so another account's ids behave exactly like unknown ones.
import { and, desc, eq, inArray, isNull, lt, ne, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
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
  async pendingWork(limit = 100): Promise<FileRow[]> {
    return this.db
      .select()
      .from(files)
      .where(and(eq(files.isDeleted, false), or(and(eq(files.status, 'QUEUED'), isNull(files.uploadId)), eq(files.status, 'UPLOADED'))))
      .orderBy(files.createdAt)
      .limit(limit);
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
