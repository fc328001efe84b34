// Turns a validated request into a command row: plan checks (403, core/accounts/plan-rules.ts), command-line parsing (422 with
// the field that is wrong), file ids fixed up front. Nothing here runs anything. A command line that
// ffmpeg would stop on with a message known already becomes a row that ends FAILED at once
// (core/commands/ended-at-submit.ts).
import { checkPrivateFiles, checkRunSeconds, checkVcpus } from '../../core/accounts/plan-rules.ts';
import { randomUUID } from 'node:crypto';
import type { Caller } from '../../core/accounts/accounts-repo.ts';
import type { NewCommandRow } from '../../core/commands/commands-repo.ts';
import { CommandStatus, CommandType } from '../../core/commands/command-status.ts';
import { checkFfmpegCommand, type CheckedCommand } from '../../core/command-line/parse.ts';
import { ErrorStatus } from '../../core/commands/error-status.ts';
import { failedAtSubmitMessage } from '../../core/command-line/ffmpeg-failure.ts';
import { CommandRejected, type ParsedCommand } from '../../core/command-line/parsed-command.ts';
import type { DeclaredOutput, StoredStep } from '../../core/db/schema.ts';
import {
  DEFAULT_VCPUS,
  PLAYLIST_ALIAS,
  runChainSchema,
  runCommandSchema,
  type RunChainRequest,
  type RunCommandRequest,
} from '../schemas/commands.ts';
import { invalid, parseBody } from '../schemas/validation.ts';
import { invalidStorageUrl } from '../../core/engine/storage-inputs.ts';
import type { Storage } from '../../core/storage/storage.ts';

interface Common {
  input_files?: Record<string, string> | null;
  output_files: Record<string, string> | 'OUTPUT_FOLDER';
  max_command_run_seconds: number;
  vcpu_count?: number;
  metadata?: Record<string, string | number | boolean> | null;
  is_private: boolean;
}

function checkPlan(caller: Caller, req: Common): number {
  const plan = caller.account.plan;
  // The spec's default of 8 vCPUs is lowered to what the plan allows; an explicit value is not.
  const vcpus = req.vcpu_count ?? Math.min(DEFAULT_VCPUS, plan.maxVcpus);
  checkVcpus(plan, vcpus);
  checkRunSeconds(plan, req.max_command_run_seconds);
  checkPrivateFiles(plan, req.is_private);
  return vcpus;
}

function parseStep(
  text: string,
  loc: (string | number)[],
  inputs: Set<string>,
  outputs: Set<string>,
  earlier: Set<string>,
  outputFolder = false,
): CheckedCommand {
  try {
    return checkFfmpegCommand(text, { inputAliases: inputs, outputAliases: outputs, earlierOutputAliases: earlier, outputFolder });
  } catch (err) {
    if (err instanceof CommandRejected) throw invalid(loc, `Value error, ${err.message}`);
    throw err;
  }
}

export const OUTPUT_FOLDER_FILE_NAME = 'output_folder.zip';

function declaredOutputs(outputFiles: Record<string, string> | 'OUTPUT_FOLDER'): DeclaredOutput[] {
  if (outputFiles === 'OUTPUT_FOLDER') {
    return [{ alias: 'OUTPUT_FOLDER', fileName: OUTPUT_FOLDER_FILE_NAME, fileId: randomUUID(), kind: 'folder' }];
  }
  return Object.entries(outputFiles).map(([alias, fileName]) => {
    // The schema has checked that a playlist output names a manifest.
    const playlist = PLAYLIST_ALIAS.test(alias);
    return { alias, fileName, fileId: randomUUID(), kind: playlist ? 'playlist' : 'file' };
  });
}

/** The error_message of a command that ends at submit: ffmpeg's message for the first step it stops on. */
function failureAtSubmit(steps: CheckedCommand[]): string | null {
  const index = steps.findIndex((step) => step.ffmpegFailure !== null);
  if (index < 0) return null;
  return failedAtSubmitMessage(steps[index].ffmpegFailure!, { index, count: steps.length }); // found just above
}

function buildRow(
  caller: Caller,
  req: Common,
  type: CommandType,
  steps: StoredStep[],
  originalRequest: Record<string, unknown>,
  vcpus: number,
  outputs: DeclaredOutput[],
  failure: string | null,
): NewCommandRow {
  const ended = failure === null ? {} : { errorStatus: ErrorStatus.FFMPEG_FAILED, errorMessage: failure };
  return {
    ...ended,
    id: randomUUID(),
    accountId: caller.account.id,
    environmentName: caller.environment,
    commandType: type,
    status: failure === null ? CommandStatus.QUEUED : CommandStatus.FAILED,
    originalRequest,
    metadata: req.metadata ?? null,
    steps,
    inputs: req.input_files ?? {},
    outputs,
    vcpuCount: vcpus,
    maxCommandRunSeconds: req.max_command_run_seconds,
    isPrivate: req.is_private,
  };
}

/** Declared outputs that no step writes would never appear: refuse them up front. */
function checkOutputsUsed(req: Common, steps: ParsedCommand[], loc: (string | number)[]) {
  if (req.output_files === 'OUTPUT_FOLDER') return;
  const produced = new Set(steps.flatMap((s) => s.outputAliases));
  const unused = Object.keys(req.output_files).filter((a) => !produced.has(a));
  if (unused.length > 0) {
    throw invalid(
      loc,
      `Value error, ${unused.join(', ')} ${unused.length > 1 ? 'are' : 'is'} declared in output_files but not written by the command; ` +
        `use {{${unused[0]}}} as an output file`,
    );
  }
}

export function singleCommandRow(caller: Caller, req: RunCommandRequest): NewCommandRow {
  const vcpus = checkPlan(caller, req);
  const folder = req.output_files === 'OUTPUT_FOLDER';
  const outputs = declaredOutputs(req.output_files);
  const inputs = new Set(Object.keys(req.input_files ?? {}));
  const outputAliases = new Set(folder ? [] : outputs.map((o) => o.alias));
  const checked = parseStep(req.ffmpeg_command, ['body', 'ffmpeg_command'], inputs, outputAliases, new Set(), folder);
  const parsed = checked.command;
  const failure = failureAtSubmit([checked]);
  // ffmpeg stops before it writes anything; an option it does not know hides the rest of the line.
  if (failure === null) checkOutputsUsed(req, [parsed], ['body', 'output_files']);
  const original = {
    ffmpeg_command: req.ffmpeg_command,
    input_files: req.input_files ?? null,
    ...(req.input_compressed_folder ? { input_compressed_folder: req.input_compressed_folder } : {}),
    output_files: req.output_files,
    max_command_run_seconds: req.max_command_run_seconds,
    vcpu_count: vcpus,
    ...(req.metadata ? { metadata: req.metadata } : {}),
  };
  const row = buildRow(caller, req, CommandType.FFMPEG_COMMAND, [{ command: parsed }], original, vcpus, outputs, failure);
  return { ...row, inputArchiveUrl: req.input_compressed_folder ?? null };
}

export function chainRow(caller: Caller, req: RunChainRequest): NewCommandRow {
  const vcpus = checkPlan(caller, req);
  const inputs = new Set(Object.keys(req.input_files ?? {}));
  const outputs = new Set(Object.keys(req.output_files));
  const earlier = new Set<string>();
  const checkedSteps: CheckedCommand[] = [];
  req.ffmpeg_commands.forEach((text, i) => {
    const loc = ['body', 'ffmpeg_commands', i];
    const checked = parseStep(text, loc, inputs, outputs, new Set(earlier));
    const parsed = checked.command;
    for (const alias of parsed.outputAliases) {
      if (earlier.has(alias)) throw invalid(loc, `Value error, {{${alias}}} is already written by an earlier command of the chain`);
    }
    for (const alias of parsed.inputAliases) {
      if (PLAYLIST_ALIAS.test(alias) && earlier.has(alias)) {
        throw invalid(loc, `Value error, the playlist {{${alias}}} cannot be an input of a later command; write a single file instead`);
      }
    }
    parsed.outputAliases.forEach((a) => earlier.add(a));
    checkedSteps.push(checked);
  });
  const steps = checkedSteps.map((checked) => checked.command);
  // A chain that ffmpeg stops on ends at once: no step runs, not even those before (nothing is downloaded).
  const failure = failureAtSubmit(checkedSteps);
  if (failure === null) checkOutputsUsed(req, steps, ['body', 'output_files']);
  const original = {
    ffmpeg_commands: req.ffmpeg_commands,
    input_files: req.input_files ?? null,
    output_files: req.output_files,
    max_command_run_seconds: req.max_command_run_seconds,
    vcpu_count: vcpus,
    ...(req.metadata ? { metadata: req.metadata } : {}),
  };
  return buildRow(
    caller,
    req,
    CommandType.FFMPEG_CHAINED_COMMANDS,
    steps.map((command) => ({ command })),
    original,
    vcpus,
    declaredOutputs(req.output_files),
    failure,
  );
}

/** A URL on this service's storage must name a valid file (no encoded '/' or '..'): a 422 naming the input. */
export async function refuseInvalidStorageUrls(
  storage: Storage,
  inputFiles: Record<string, string> | null | undefined,
  archive?: string | null,
): Promise<void> {
  for (const [alias, url] of Object.entries(inputFiles ?? {})) {
    const problem = await invalidStorageUrl(storage, url);
    if (problem) throw invalid(['body', 'input_files', alias], problem);
  }
  const problem = archive ? await invalidStorageUrl(storage, archive) : null;
  if (problem) throw invalid(['body', 'input_compressed_folder'], problem);
}

/**
 * A submission that did not come over HTTP (an FfmpegCommand's spec, as its body): checked as the routes
 * check theirs, so it is refused with the same RequestInvalid (422) and PlanRefusal (403) texts. A body
 * with ffmpeg_commands is a chain, any other a single command.
 */
export async function commandRowOfBody(caller: Caller, body: Record<string, unknown>, storage: Storage): Promise<NewCommandRow> {
  if ('ffmpeg_commands' in body) {
    const req = parseBody(runChainSchema, body);
    await refuseInvalidStorageUrls(storage, req.input_files);
    return chainRow(caller, req);
  }
  const req = parseBody(runCommandSchema, body);
  await refuseInvalidStorageUrls(storage, req.input_files, req.input_compressed_folder);
  return singleCommandRow(caller, req);
}
