// Turns a command row and its step index into what the runner needs. Inputs that are outputs of
// earlier steps are read straight from storage through presigned URLs; outputs get presigned PUTs.
import type { CommandRow } from '../core/commands/commands-repo.ts';
import type { StepInput, StepOutput, StepSpec } from '../core/jobs/step-spec.ts';
import type { Storage } from '../core/storage/storage.ts';
import { objectKey } from '../core/storage/object-keys.ts';

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
export function stepDeadlineSeconds(c: CommandRow, limits: RunLimits): number {
  return Math.ceil(limits.downloadTimeoutSeconds + c.maxCommandRunSeconds + limits.uploadAllowanceSeconds);
}

export async function buildStepSpec(c: CommandRow, step: number, storage: Storage, limits: RunLimits): Promise<StepSpec> {
  const parsed = c.steps[step].command;
  const urlTtl = stepDeadlineSeconds(c, limits) + 600;
  const keyOf = (fileId: string, fileName: string) =>
    objectKey({ isPrivate: c.isPrivate, accountId: c.accountId, fileId, fileName });

  const inputs: StepInput[] = [];
  for (const alias of parsed.inputAliases) {
    const external = c.inputs[alias];
    if (external !== undefined) {
      inputs.push({ alias, url: external, source: 'external' });
      continue;
    }
    const earlier = c.outputs.find((o) => o.alias === alias);
    if (!earlier) throw new Error(`step ${step} uses ${alias}, which no input or earlier output declares`);
    inputs.push({ alias, url: await storage.presignGet(keyOf(earlier.fileId, earlier.fileName), urlTtl), source: 'storage' });
  }

  const outputs: StepOutput[] = [];
  for (const alias of parsed.outputAliases) {
    const declared = c.outputs.find((o) => o.alias === alias)!;
    outputs.push({ alias, fileName: declared.fileName, uploadUrl: await storage.presignPut(keyOf(declared.fileId, declared.fileName), urlTtl) });
  }

  return {
    commandId: c.id,
    step,
    command: parsed,
    inputs,
    outputs,
    threads: Math.max(1, Math.min(c.vcpuCount, limits.maxThreads)),
    timeoutSeconds: c.maxCommandRunSeconds,
    download: { maxBytes: limits.downloadMaxBytes, timeoutSeconds: limits.downloadTimeoutSeconds, allow: limits.allow },
  };
}
