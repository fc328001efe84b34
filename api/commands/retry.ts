// POST /v1/commands/{id}/retry: a FAILED command's request, submitted again as a new command. The
// request is checked as a new submission is (today's parser and plan: a 422 or a 403 like a submit),
// from what the command stored of it (original_request; is_private from the row, which the stored
// request leaves out).
import type { Caller } from '../../core/accounts/accounts-repo.ts';
import type { CommandRow, NewCommandRow } from '../../core/commands/commands-repo.ts';
import { CommandStatus, CommandType } from '../../core/commands/command-status.ts';
import { runChainSchema, runCommandSchema } from '../schemas/commands.ts';
import { parseWith } from '../schemas/validation.ts';
import { chainRow, singleCommandRow } from './submission.ts';

/** Why the command cannot be retried (the 409's detail), or null. */
export function retryRefusal(c: Pick<CommandRow, 'id' | 'status' | 'retriedBy'>): string | null {
  if (c.status !== CommandStatus.FAILED) return `command ${c.id} is ${c.status}: only a FAILED command can be retried`;
  if (c.retriedBy !== null) return `command ${c.id} was retried already by command ${c.retriedBy}; retry that one if it failed too`;
  return null;
}

/** The new command's row: the original request checked again, naming the command it retries. */
export function retryRow(caller: Caller, failed: CommandRow): NewCommandRow {
  // Problems are named by the field of the stored request, under original_request.
  const loc = ['original_request'];
  const stored = { ...failed.originalRequest, is_private: failed.isPrivate };
  const row =
    failed.commandType === CommandType.FFMPEG_CHAINED_COMMANDS
      ? chainRow(caller, parseWith(runChainSchema, stored, loc))
      : singleCommandRow(caller, parseWith(runCommandSchema, stored, loc));
  return { ...row, retryOf: failed.id };
}
