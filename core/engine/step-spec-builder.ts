// Turns a command row and its step index into what the runner needs. Inputs that are outputs of
// earlier steps are read straight from storage through presigned URLs; outputs get presigned PUTs.
import type { CommandRow } from '../commands/commands-repo.ts';
import type { StepInput, StepOutput, StepSpec } from '../jobs/step-spec.ts';
import type { Storage } from '../storage/storage.ts';
import { objectKey } from '../storage/object-keys.ts';
import { accountMayRead, storageKeyOfUrl } from './storage-inputs.ts';

export interface RunLimits {
  downloadMaxBytes: number;
  downloadTimeoutSeconds: number;
  /** Time allowed for probing and uploading outputs, on top of downloads and ffmpeg. */
  uploadAllowanceSeconds: number;
  allow: string[];
  /** Cores a runner may use; ffmpeg threads are capped at this. */
  maxThreads: number;
}

/** Whole-step deadline: downloads + max_command_run_seconds + uploads. */
export function stepDeadlineSeconds(command: CommandRow, limits: RunLimits): number {
  return Math.ceil(limits.downloadTimeoutSeconds + command.maxCommandRunSeconds + limits.uploadAllowanceSeconds);
}

/** Where a runner puts a playlist's zip until the reconciler unpacks it next to the manifest. */
export function playlistStagingKey(accountId: string, fileId: string): string {
  return `staging/${accountId}/${fileId}/playlist.zip`;
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

  // A folder output is written by the command's plain relative names, so it has no placeholder.
  const produced = command.outputs.filter((o) => o.kind === 'folder' || parsed.outputAliases.includes(o.alias));
  const outputs: StepOutput[] = [];
  for (const o of produced) {
    const key = o.kind === 'playlist' ? playlistStagingKey(command.accountId, o.fileId) : keyOf(o.fileId, o.fileName);
    outputs.push({ alias: o.alias, fileName: o.fileName, kind: o.kind, uploadUrl: await storage.presignPut(key, urlTtl) });
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
    threads: Math.max(1, Math.min(command.vcpuCount, limits.maxThreads)),
    timeoutSeconds: command.maxCommandRunSeconds,
    download: { maxBytes: limits.downloadMaxBytes, timeoutSeconds: limits.downloadTimeoutSeconds, allow: limits.allow },
  };
}
