// A command that ends at submit: ffmpeg would stop on it with a message known already (a filter,
// option or format it does not know, a graph it cannot read; see ffmpeg-failure.ts). It is stored and
// ended FAILED in one transaction, so no reconciler ever sees it QUEUED, nothing is downloaded and
// ffmpeg does not run. It is stored QUEUED first and then ended: the database announces an ended
// command (webhook message, change notification) when its status changes, as for any other.
import { eq } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { commands } from '../db/schema.ts';
import { CommandStatus } from './command-status.ts';
import { CommandsRepo, type CommandRow, type NewCommandQuotas, type NewCommandRow } from './commands-repo.ts';

/** True for a new command row that ends at submit (built FAILED by the submission). */
export function endsAtSubmit(row: NewCommandRow): boolean {
  return row.status === CommandStatus.FAILED;
}

/** Stores a command that ends at submit (within the account's quotas, as CommandsRepo.insert) and ends it. */
export async function insertEndedAtSubmit(db: Db, row: NewCommandRow, quotas?: NewCommandQuotas): Promise<CommandRow> {
  const { status, errorStatus, errorMessage } = row;
  return db.transaction(async (tx) => {
    const queued = { ...row, status: CommandStatus.QUEUED, errorStatus: null, errorMessage: null, finishedAt: null };
    const stored = await new CommandsRepo(tx).insert(queued, quotas);
    // It ends as it is created (processing_seconds 0), in the database's clock.
    const [ended] = await tx
      .update(commands)
      .set({ status, errorStatus, errorMessage, finishedAt: stored.createdAt })
      .where(eq(commands.id, row.id))
      .returning();
    return ended;
  });
}

/** Stores a new command as submitted: QUEUED, or ended already when ffmpeg would stop on it. */
export function insertSubmitted(db: Db, row: NewCommandRow, quotas?: NewCommandQuotas): Promise<CommandRow> {
  return endsAtSubmit(row) ? insertEndedAtSubmit(db, row, quotas) : new CommandsRepo(db).insert(row, quotas);
}
