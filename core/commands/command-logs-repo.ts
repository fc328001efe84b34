// ffmpeg's log of each step of a command: pieces appended in order as the runner sends them, the last
// 1 MiB kept (cut in the UPDATE itself, so a long log never grows a row), gone with the retention.
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { commandLogs } from '../db/schema.ts';

/** FFOP_LOG_RETENTION_DAYS' default: 7 days after the command ended. */
export const DEFAULT_LOG_RETENTION_MS = 7 * 86_400_000;

/** Characters of each step's log that are kept: the last 1 MiB of ffmpeg's (ASCII) output. */
export const LOG_KEPT_CHARS = 1024 * 1024;

export interface StepLog {
  /** 0-based, as steps are stored. */
  step: number;
  text: string;
  cutChars: number;
}

export class CommandLogsRepo {
  private readonly db: Db;
  private readonly keptChars: number;
  constructor(db: Db, keptChars = LOG_KEPT_CHARS) {
    this.db = db;
    this.keptChars = keptChars;
  }

  async append(commandId: string, step: number, piece: string): Promise<void> {
    const kept = this.keptChars;
    const first = piece.length > kept ? piece.slice(-kept) : piece;
    await this.db.execute(sql`
      insert into command_logs (command_id, step, text, cut_chars)
      values (${commandId}, ${step}, ${first}, ${piece.length - first.length})
      on conflict (command_id, step) do update set
        text = right(command_logs.text || ${piece}, ${kept}),
        cut_chars = command_logs.cut_chars + greatest(0, length(command_logs.text) + ${piece.length} - ${kept}),
        updated_at = now()`);
  }

  async read(commandId: string, step?: number): Promise<StepLog[]> {
    const rows = await this.db
      .select({ step: commandLogs.step, text: commandLogs.text, cutChars: commandLogs.cutChars })
      .from(commandLogs)
      .where(
        step === undefined ? eq(commandLogs.commandId, commandId) : and(eq(commandLogs.commandId, commandId), eq(commandLogs.step, step)),
      )
      .orderBy(asc(commandLogs.step));
    return rows;
  }

  /** Deletes up to `batch` logs of steps of commands that ended before `endedBefore`; returns how many went. */
  async pruneEndedBefore(endedBefore: Date, batch: number): Promise<number> {
    const result = await this.db.execute(sql`
      delete from command_logs where (command_id, step) in (
        select l.command_id, l.step from command_logs l join commands c on c.id = l.command_id
        where c.finished_at < ${endedBefore.toISOString()} limit ${batch})
      returning 1`);
    return Array.isArray(result) ? result.length : ((result as { rows?: unknown[] }).rows?.length ?? 0);
  }
}
