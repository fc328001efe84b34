// The FfmpegCommand resource as crds/ffmpegcommand.yaml defines it: one type for the operator that
// writes it, the API that creates it and the CRD test that checks the API server agrees.
//
// Its spec is what a person writes (kubectl, GitOps): the HTTP API's request body in camelCase. The HTTP
// API makes one for each command it stores (in its own namespace, named after the command id); one made
// by anyone else is taken in by the operator (operator/cluster/command-intake.ts) and runs for the
// account its namespace is bound to.
import type { CustomObjectsApi, KubernetesObject } from '@kubernetes/client-node';
import type { CommandRow } from '../commands/commands-repo.ts';
import type { ProcessingStage } from '../jobs/step-spec.ts';
import { API_VERSION, GROUP, KIND, LABELS, MANAGED_BY, PLURAL, VERSION } from './names.ts';

/** v1beta1's spec; immutable once created (the CRD refuses changes). Exactly one of command / commands. */
export interface FfmpegCommandSpec {
  command?: string;
  commands?: string[];
  inputFiles?: Record<string, string>;
  inputCompressedFolder?: string;
  /** Exactly one of outputFiles / outputFolder (OUTPUT_FOLDER, single commands only). */
  outputFiles?: Record<string, string>;
  outputFolder?: boolean;
  vcpuCount?: number;
  maxCommandRunSeconds?: number;
  metadata?: Record<string, string | number | boolean>;
  isPrivate?: boolean;
}

/** An output as the poll record's output_files entry shows it, camelCased; absent fields are unknown. */
export interface FfmpegCommandOutput {
  alias: string;
  fileId: string;
  fileName: string;
  sizeBytes: number;
  storageKey: string;
  storageUrl?: string;
  sizeMbytes?: number;
  fileCount?: number;
  isPrivate?: boolean;
  fileType?: string;
  fileFormat?: string;
  codec?: string;
  mimeType?: string;
  duration?: number;
  width?: number;
  height?: number;
  frameRate?: number;
  pixelFormat?: string;
  bitrateVideoKb?: number;
  bitrateAudioKb?: number;
}

export type ConditionType = 'Accepted' | 'Running' | 'Succeeded' | 'Failed';

/** metav1.Condition. */
export interface FfmpegCommandCondition {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/** Why a resource was not taken in (errorStatus of a refused resource; never a command's error_status). */
export const RefusalStatus = {
  /** Its namespace carries no account binding (or names an account that does not exist). */
  NAMESPACE_NOT_BOUND: 'NAMESPACE_NOT_BOUND',
  /** The spec is one the HTTP API answers with a 422: errorMessage is that answer's text. */
  INVALID_COMMAND: 'INVALID_COMMAND',
  /** The account's plan or quotas refuse it, as the HTTP API's 403 does: errorMessage is its text. */
  NOT_ALLOWED: 'NOT_ALLOWED',
} as const;
export type RefusalStatus = (typeof RefusalStatus)[keyof typeof RefusalStatus];

/** Written only through the status subresource (operator/cluster/command-status.ts). */
export interface FfmpegCommandStatus {
  /** The id GET /v1/commands/{id} knows: metadata.uid for resources taken in, metadata.name for the HTTP API's. */
  commandId?: string;
  phase: 'QUEUED' | 'PROCESSING' | 'SUCCESS' | 'FAILED';
  stage?: ProcessingStage | '';
  currentStep?: number;
  jobNames?: string[];
  queuedAt?: string;
  startedAt?: string | null;
  finishedAt?: string | null;
  durationSeconds?: number;
  errorStatus?: string;
  errorMessage?: string;
  /**
   * How far ffmpeg is in the current step, as a poll shows it (percent: of the expected duration, null
   * when unknown); null, so absent, unless PROCESSING and ffmpeg has reported. Null members are not
   * kept (merge patch).
   */
  progress?: { percent: number | null; outTimeSeconds: number; speed: number | null } | null;
  outputs?: FfmpegCommandOutput[];
  conditions?: FfmpegCommandCondition[];
  observedGeneration?: number;
}

export interface FfmpegCommandObject extends KubernetesObject {
  spec?: FfmpegCommandSpec;
  status?: FfmpegCommandStatus;
}

/** The HTTP request body a spec stands for (the API's field names); a spec's absent fields stay absent. */
export function requestBodyOf(spec: FfmpegCommandSpec): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (spec.command !== undefined) body.ffmpeg_command = spec.command;
  if (spec.commands !== undefined) body.ffmpeg_commands = spec.commands;
  if (spec.inputFiles !== undefined) body.input_files = spec.inputFiles;
  if (spec.inputCompressedFolder !== undefined) body.input_compressed_folder = spec.inputCompressedFolder;
  if (spec.outputFolder === true) body.output_files = 'OUTPUT_FOLDER';
  else if (spec.outputFiles !== undefined) body.output_files = spec.outputFiles;
  if (spec.vcpuCount !== undefined) body.vcpu_count = spec.vcpuCount;
  if (spec.maxCommandRunSeconds !== undefined) body.max_command_run_seconds = spec.maxCommandRunSeconds;
  if (spec.metadata !== undefined) body.metadata = spec.metadata;
  if (spec.isPrivate !== undefined) body.is_private = spec.isPrivate;
  return body;
}

/** The spec of a stored command: its request as the API stored it (original_request), camelCased. */
export function specOf(command: Pick<CommandRow, 'originalRequest' | 'vcpuCount' | 'maxCommandRunSeconds' | 'isPrivate' | 'metadata'>) {
  const req = command.originalRequest;
  const spec: FfmpegCommandSpec = {};
  if (typeof req.ffmpeg_command === 'string') spec.command = req.ffmpeg_command;
  if (Array.isArray(req.ffmpeg_commands)) spec.commands = req.ffmpeg_commands as string[];
  if (req.input_files && typeof req.input_files === 'object') spec.inputFiles = req.input_files as Record<string, string>;
  if (typeof req.input_compressed_folder === 'string') spec.inputCompressedFolder = req.input_compressed_folder;
  if (req.output_files === 'OUTPUT_FOLDER') spec.outputFolder = true;
  else if (req.output_files && typeof req.output_files === 'object') spec.outputFiles = req.output_files as Record<string, string>;
  spec.vcpuCount = command.vcpuCount;
  spec.maxCommandRunSeconds = command.maxCommandRunSeconds;
  if (command.metadata) spec.metadata = command.metadata;
  spec.isPrivate = command.isPrivate;
  return spec;
}

/** Creates the resource of a command the HTTP API stored; returns its uid, or null when it existed already. */
export async function createFfmpegCommand(api: CustomObjectsApi, namespace: string, command: CommandRow): Promise<string | null> {
  const body: FfmpegCommandObject = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name: command.id,
      namespace,
      labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.commandId]: command.id, [LABELS.account]: command.accountId },
    },
    spec: specOf(command),
  };
  try {
    const created = (await api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, body })) as {
      metadata?: { uid?: string };
    };
    return created.metadata?.uid ?? null;
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
    return null;
  }
}

/**
 * Whether the HTTP API made this resource (or the operator for a row the API stored): in the operator's
 * own namespace, named after the command id its label gives. Anything else was made by someone else and
 * is taken in as a new command.
 */
export function madeByTheApi(obj: KubernetesObject, operatorNamespace: string): boolean {
  const m = obj.metadata;
  return m?.namespace === operatorNamespace && m.labels?.[LABELS.commandId] === m.name && m.labels?.[LABELS.managedBy] === MANAGED_BY;
}

/** The command id of a resource: its name for the API's, its uid for one taken in. */
export function commandIdOf(obj: KubernetesObject, operatorNamespace: string): string | undefined {
  return madeByTheApi(obj, operatorNamespace) ? obj.metadata?.name : obj.metadata?.uid;
}
