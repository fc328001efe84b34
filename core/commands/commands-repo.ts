// Reads and writes of commands and their output files. Every read a client can trigger is scoped by
// account, so another account's ids behave exactly like unknown ones.
import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { commands, files } from '../db/schema.ts';
import { CommandStatus } from './command-status.ts';

export type CommandRow = typeof commands.$inferSelect;
export type NewCommandRow = typeof commands.$inferInsert;
export type { FileRow, NewFileRow } from '../files/files-repo.ts';
import type { FileRow, NewFileRow } from '../files/files-repo.ts';

export interface CommandListRow extends CommandRow {
  outputFileCount: number;
  storedBytes: number;
}

export class CommandsRepo {
  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  async insert(row: NewCommandRow): Promise<void> {
    await this.db.insert(commands).values(row);
  }

  async findForAccount(accountId: string, id: string): Promise<CommandRow | null> {
    const [row] = await this.db
      .select()
      .from(commands)
      .where(and(eq(commands.id, id), eq(commands.accountId, accountId)));
    return row ?? null;
  }

  /** A command with its output files in one query: the poll path, the API's busiest read. */
  async findWithOutputsForAccount(accountId: string, id: string): Promise<{ row: CommandRow; files: FileRow[] } | null> {
    const joined = await this.db
      .select({ command: commands, file: files })
      .from(commands)
      .leftJoin(files, eq(files.commandId, commands.id))
      .where(and(eq(commands.id, id), eq(commands.accountId, accountId)))
      .orderBy(asc(files.createdAt));
    if (joined.length === 0) return null;
    return { row: joined[0].command, files: joined.flatMap((j) => (j.file ? [j.file] : [])) };
  }

  async findById(id: string): Promise<CommandRow | null> {
    const [row] = await this.db.select().from(commands).where(eq(commands.id, id));
    return row ?? null;
  }

  async listForAccount(accountId: string, limit: number, offset: number): Promise<CommandListRow[]> {
    const rows = await this.db
      .select()
      .from(commands)
      .where(eq(commands.accountId, accountId))
      .orderBy(desc(commands.createdAt), desc(commands.seq))
      .limit(limit)
      .offset(offset);
    if (rows.length === 0) return [];
    const counts = await this.db
      .select({
        commandId: files.commandId,
        count: sql<number>`count(*)::int`,
        bytes: sql<number>`coalesce(sum(case when ${files.isDeleted} then 0 else ${files.sizeBytes} end), 0)::float8`,
      })
      .from(files)
      .where(inArray(files.commandId, rows.map((r) => r.id)))
      .groupBy(files.commandId);
    const byCommand = new Map(counts.map((c) => [c.commandId, c]));
    return rows.map((r) => ({
      ...r,
      outputFileCount: Number(byCommand.get(r.id)?.count ?? 0),
      storedBytes: Number(byCommand.get(r.id)?.bytes ?? 0),
    }));
  }

  async outputFiles(commandId: string): Promise<FileRow[]> {
    return this.db.select().from(files).where(eq(files.commandId, commandId)).orderBy(asc(files.createdAt));
  }

  /** QUEUED and PROCESSING commands, oldest first: the reconciler's working set. */
  async active(): Promise<CommandRow[]> {
    return this.db
      .select()
      .from(commands)
      .where(inArray(commands.status, [CommandStatus.QUEUED, CommandStatus.PROCESSING]))
      .orderBy(asc(commands.seq));
  }

  async update(id: string, patch: Partial<NewCommandRow>): Promise<void> {
    await this.db.update(commands).set(patch).where(eq(commands.id, id));
  }

  /** Records a finished step's outputs and its command's new state in one transaction. */
  async completeStep(id: string, outputs: NewFileRow[], patch: Partial<NewCommandRow>): Promise<void> {
    await this.db.transaction(async (tx) => {
      for (const file of outputs) {
        // Upsert: a step that ran again after a restart overwrites its earlier record.
        await tx.insert(files).values(file).onConflictDoUpdate({ target: files.id, set: file });
      }
      await tx.update(commands).set(patch).where(eq(commands.id, id));
    });
  }
}
