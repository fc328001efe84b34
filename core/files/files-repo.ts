// Stored files: command outputs, files stored from a URL, direct uploads. Reads a client can trigger
// are scoped by account, so another account's ids behave exactly like unknown ones.
import { and, desc, eq, gte, inArray, isNull, lt, ne, or, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { rowsOf } from '../db/migrate.ts';
import { commands, files } from '../db/schema.ts';
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

  /** Bytes the account keeps in storage: live files, plus announced sizes of uploads in progress. */
  async storageUsedBytes(accountId: string): Promise<number> {
    const [row] = await this.db.select({ bytes: storedBytes }).from(files).where(liveFilesOf(accountId));
    return Number(row?.bytes ?? 0);
  }

  /** Both quota figures in one read: bytes the account stores, and bytes its commands processed since `since`. */
  async usage(accountId: string, since: Date): Promise<{ storedBytes: number; processedBytes: number }> {
    const stored = this.db.select({ bytes: storedBytes }).from(files).where(liveFilesOf(accountId));
    const processed = this.db
      .select({ bytes: sql<number>`coalesce(sum(${commands.processedBytes}), 0)::float8` })
      .from(commands)
      .where(and(eq(commands.accountId, accountId), gte(commands.createdAt, since)));
    const result = await this.db.execute(sql`select (${stored}) as stored, (${processed}) as processed`);
    const [row] = rowsOf<{ stored: number; processed: number }>(result);
    return { storedBytes: Number(row?.stored ?? 0), processedBytes: Number(row?.processed ?? 0) };
  }
}

const storedBytes = sql<number>`coalesce(sum(coalesce(${files.sizeBytes}, ${files.expectedSizeBytes}, 0)), 0)::float8`;

function liveFilesOf(accountId: string) {
  return and(eq(files.accountId, accountId), eq(files.isDeleted, false), ne(files.status, 'FAILED'));
}
