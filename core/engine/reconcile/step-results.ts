// A step's result, made ready before the reconciler's serialised section: its command read once, the
// result checked like user input, a playlist's files copied into storage. Slow preparation then does
// not hold up other commands' transitions; reconcileCommand decides what the result means.
import type { CommandRow, CommandsRepo, NewFileRow } from '../../commands/commands-repo.ts';
import { CommandStatus } from '../../commands/command-status.ts';
import { FileStatus, StoreType } from '../../files/file-status.ts';
import type { RunnerEvent } from '../../jobs/step-spec.ts';
import type { Storage } from '../../storage/storage.ts';
import { objectKey } from '../../storage/object-keys.ts';
import { parseRunnerEvent } from '../../jobs/runner-event-schema.ts';
import { refusedResult, resultProblem } from '../../jobs/result-bounds.ts';
import { jobName, type JobRef } from '../job-backend.ts';
import { playlistStagingKey, stepBounds, type RunLimits } from '../step-spec-builder.ts';
import { unpackPlaylist } from '../playlist-unpack.ts';
import { abortOutputUploads, completeOutputUploads } from '../output-uploads.ts';

export type ResultEvent = Extract<RunnerEvent, { type: 'result' }>;

/** A result's command as read before the serialised section (see prepareResult). */
export interface PreparedResult {
  /** The result as reported, or a failure in its place when it was refused. */
  event: ResultEvent;
  /** Null when the result is late (the command ended or moved on) or could not be read. */
  command: CommandRow | null;
  /** For a success: what went wrong storing its playlist outputs, if anything. */
  problem: string | null;
  readError: Error | null;
}

export interface ResultContext {
  commands: CommandsRepo;
  storage: Storage;
  limits: RunLimits;
  /** Scratch space (unpacking playlists). */
  workDir: string;
  /** Told when a result is refused (and a failure stored in its place). */
  onRefused: (command: CommandRow, step: number, event: ResultEvent) => void;
  /** Told when the multipart uploads a failed step left could not be aborted. */
  onUploadsLeft?: (command: CommandRow, step: number, err: Error) => void;
}

/**
 * The result's command, read once (null when the result is late: the command ended or moved on), and
 * for a success what went wrong unpacking its playlist outputs, if anything.
 */
export async function prepareResult(ctx: ResultContext, ref: JobRef, reported: ResultEvent): Promise<PreparedResult> {
  let command: CommandRow | null;
  try {
    command = await ctx.commands.findById(ref.commandId);
  } catch (err) {
    return { event: reported, command: null, problem: null, readError: err as Error };
  }
  if (!runsStep(command, ref)) return { event: reported, command: null, problem: null, readError: null };
  // A runner's result is checked like user input (a hostile command may post its own in cluster mode).
  const event = checkedResult(reported, command, ref.step, ctx.limits);
  if (event !== reported) ctx.onRefused(command, ref.step, event);
  if (!event.ok) {
    await abortUploads(ctx, command, ref.step);
    return { event, command, problem: null, readError: null };
  }
  let problem: string | null;
  try {
    problem = (await completeOutputUploads(ctx.storage, command, event.outputs)) ?? (await unpackPlaylists(ctx, command, event.outputs));
  } catch (err) {
    problem = `could not store the outputs: ${(err as Error).message}`;
  }
  if (problem !== null) await abortUploads(ctx, command, ref.step);
  return { event, command, problem, readError: null };
}

function abortUploads(ctx: ResultContext, command: CommandRow, step: number): Promise<void> {
  return abortOutputUploads(ctx.storage, ctx.limits.outputMultipart, command, step, (err) => ctx.onUploadsLeft?.(command, step, err));
}

/** Copies the files of the result's playlist outputs into storage; what went wrong, if anything. */
async function unpackPlaylists(ctx: ResultContext, command: CommandRow, outputs: { alias: string }[]): Promise<string | null> {
  for (const o of outputs) {
    const declared = command.outputs.find((d) => d.alias === o.alias);
    if (declared?.kind !== 'playlist') continue;
    const key = objectKey({
      isPrivate: command.isPrivate,
      accountId: command.accountId,
      fileId: declared.fileId,
      fileName: declared.fileName,
    });
    try {
      await unpackPlaylist(
        ctx.storage,
        playlistStagingKey(command.accountId, declared.fileId),
        key.slice(0, key.lastIndexOf('/') + 1),
        ctx.workDir,
      );
    } catch (err) {
      return `could not store the playlist ${o.alias}: ${(err as Error).message}`;
    }
  }
  return null;
}

/** The result if it is well formed and could be true of the step; otherwise a failure that says why. */
export function checkedResult(reported: ResultEvent, command: CommandRow, step: number, limits: RunLimits): ResultEvent {
  const parsed = parseRunnerEvent(reported);
  const problem = parsed.ok ? resultProblem(parsed.event as ResultEvent, stepBounds(command, step, limits)) : parsed.problem;
  return problem === null ? reported : refusedResult(problem);
}

/** The rows of the files a successful step stored, one per output it reported. */
export function outputFileRows(command: CommandRow, event: Extract<ResultEvent, { ok: true }>): NewFileRow[] {
  return event.outputs.map((o) => {
    const declared = command.outputs.find((d) => d.alias === o.alias)!;
    return {
      id: declared.fileId,
      accountId: command.accountId,
      environmentName: command.environmentName,
      commandId: command.id,
      alias: o.alias,
      serviceStoreType: StoreType.OUTPUT,
      status: FileStatus.STORED,
      storageKey: objectKey({
        isPrivate: command.isPrivate,
        accountId: command.accountId,
        fileId: declared.fileId,
        fileName: declared.fileName,
      }),
      fileName: declared.fileName,
      originalFileUrl: declared.fileName,
      isPrivate: command.isPrivate,
      sizeBytes: o.size,
      fileCount: o.fileCount ?? 1,
      sizeCompressedBytes: o.compressedSize ?? null,
      media: o.media,
    };
  });
}

/** The command is PROCESSING the step and attempt of this Job. */
export function runsStep(command: CommandRow | null, ref: JobRef): command is CommandRow {
  return command?.status === CommandStatus.PROCESSING && jobName(command.id, command.currentStep, command.attempt) === ref.name;
}
