// Turns a command row and its step index into what the runner needs. Inputs that are outputs of
// earlier steps are read straight from storage through presigned URLs; outputs get presigned PUTs.
import type { CommandRow } from '../commands/commands-repo.ts';
import type { StepInput, StepOutput, StepSpec } from '../jobs/step-spec.ts';
import { DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_OUTPUT_FILES } from '../jobs/step-spec.ts';
import type { StepBounds } from '../jobs/result-bounds.ts';
import type { Storage } from '../storage/storage.ts';
import { objectKey } from '../storage/object-keys.ts';
import { accountMayRead, storageKeyOfUrl } from './storage-inputs.ts';
import type { OutputMultipartSettings } from '../jobs/output-parts.ts';

export interface RunLimits {
  downloadMaxBytes: number;
  downloadTimeoutSeconds: number;
  /** Time allowed for probing and uploading outputs, on top of downloads and ffmpeg. */
  uploadAllowanceSeconds: number;
  allow: string[];
  /** Cores a runner may use; ffmpeg threads are capped at this. */
  maxThreads: number;
  /** What a runner may write (FFOP_MAX_OUTPUT_FILE_BYTES, FFOP_MAX_OUTPUT_FILES): results are held to it. */
  maxOutputFileBytes?: number;
  maxOutputFiles?: number;
  /** Cluster mode: a step's disk (FFOP_RUNNER_DISK_LIMIT), or undefined when not known. */
  stepDiskBytes?: number;
  /** Cluster mode: large outputs go up in parts (core/jobs/output-parts.ts); absent, every output is one PUT. */
  outputMultipart?: OutputMultipartSettings;
}

/** Whole-step deadline: downloads + max_command_run_seconds + uploads. */
export function stepDeadlineSeconds(
  command: Pick<CommandRow, 'maxCommandRunSeconds'>,
  limits: Pick<RunLimits, 'downloadTimeoutSeconds' | 'uploadAllowanceSeconds'>,
): number {
  return Math.ceil(limits.downloadTimeoutSeconds + command.maxCommandRunSeconds + limits.uploadAllowanceSeconds);
}

/** Where a runner puts a playlist's zip until the reconciler unpacks it next to the manifest. */
export function playlistStagingKey(accountId: string, fileId: string): string {
  return `staging/${accountId}/${fileId}/playlist.zip`;
}

/** Where an output of the command is stored; a playlist's zip first goes to its staging key. */
export function outputKey(
  command: Pick<CommandRow, 'isPrivate' | 'accountId'>,
  o: Pick<CommandRow['outputs'][number], 'kind' | 'fileId' | 'fileName'>,
): string {
  if (o.kind === 'playlist') return playlistStagingKey(command.accountId, o.fileId);
  return objectKey({ isPrivate: command.isPrivate, accountId: command.accountId, fileId: o.fileId, fileName: o.fileName });
}

/** The outputs a step writes. A folder output is written by the command's plain relative names, so it has no placeholder. */
export function stepOutputs(command: Pick<CommandRow, 'steps' | 'outputs'>, step: number): CommandRow['outputs'] {
  const parsed = command.steps[step].command;
  return command.outputs.filter((o) => o.kind === 'folder' || parsed.outputAliases.includes(o.alias));
}

/** What the step's result may report (result-bounds.ts); the same limits its runner was given. */
export function stepBounds(
  command: Pick<CommandRow, 'steps' | 'outputs' | 'inputArchiveUrl' | 'maxCommandRunSeconds'>,
  step: number,
  limits: Pick<RunLimits, 'downloadMaxBytes' | 'maxOutputFileBytes' | 'maxOutputFiles' | 'stepDiskBytes' | 'outputMultipart'>,
): StepBounds {
  return {
    outputs: stepOutputs(command, step),
    downloads: command.steps[step].command.inputAliases.length + (command.inputArchiveUrl ? 1 : 0),
    downloadMaxBytes: limits.downloadMaxBytes,
    maxOutputFileBytes: limits.maxOutputFileBytes ?? DEFAULT_MAX_OUTPUT_FILE_BYTES,
    maxOutputFiles: limits.maxOutputFiles ?? DEFAULT_MAX_OUTPUT_FILES,
    maxCommandRunSeconds: command.maxCommandRunSeconds,
    diskBytes: limits.stepDiskBytes ?? null,
    outputPartMinBytes: limits.outputMultipart?.minPartBytes ?? null,
  };
}

export async function buildStepSpec(command: CommandRow, step: number, storage: Storage, limits: RunLimits): Promise<StepSpec> {
  const parsed = command.steps[step].command;
  const urlTtl = stepDeadlineSeconds(command, limits) + 600;
  const keyOf = (fileId: string, fileName: string) =>
    objectKey({ isPrivate: command.isPrivate, accountId: command.accountId, fileId, fileName });

  const inputs: StepInput[] = [];
  for (const alias of parsed.inputAliases) {
    const external = command.inputs[alias];
    if (external !== undefined) {
      const key = await storageKeyOfUrl(storage, external);
      if (key !== null && accountMayRead(key, command.accountId)) {
        inputs.push({ alias, url: await storage.presignGet(key, urlTtl), source: 'storage' });
      } else {
        inputs.push({ alias, url: external, source: 'external' });
      }
      continue;
    }
    const earlier = command.outputs.find((o) => o.alias === alias);
    if (!earlier) throw new Error(`step ${step} uses ${alias}, which no input or earlier output declares`);
    inputs.push({ alias, url: await storage.presignGet(keyOf(earlier.fileId, earlier.fileName), urlTtl), source: 'storage' });
  }

  const produced = stepOutputs(command, step);
  const outputs: StepOutput[] = [];
  for (const o of produced) {
    const uploadUrl = await storage.presignPut(outputKey(command, o), urlTtl);
    outputs.push({ alias: o.alias, fileName: o.fileName, kind: o.kind, uploadUrl });
  }

  let archive: StepSpec['archive'];
  if (command.inputArchiveUrl) {
    const key = await storageKeyOfUrl(storage, command.inputArchiveUrl);
    archive =
      key !== null && accountMayRead(key, command.accountId)
        ? { url: await storage.presignGet(key, urlTtl), source: 'storage' }
        : { url: command.inputArchiveUrl, source: 'external' };
  }

  return {
    commandId: command.id,
    step,
    command: parsed,
    inputs,
    archive,
    outputs,
    multipartMinBytes: limits.outputMultipart?.minBytes,
    threads: Math.max(1, Math.min(command.vcpuCount, limits.maxThreads)),
    timeoutSeconds: command.maxCommandRunSeconds,
    download: { maxBytes: limits.downloadMaxBytes, timeoutSeconds: limits.downloadTimeoutSeconds, allow: limits.allow },
  };
}
