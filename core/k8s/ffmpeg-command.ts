// The FfmpegCommand resource as crds/ffmpegcommand.yaml defines it: one type for the operator that
// writes it, the API that creates it and the CRD test that checks the API server agrees.
import type { CustomObjectsApi, KubernetesObject } from '@kubernetes/client-node';
import type { CommandRow } from '../commands/commands-repo.ts';
import type { CommandType } from '../commands/command-status.ts';
import type { ErrorStatus } from '../commands/error-status.ts';
import type { ProcessingStage } from '../jobs/step-spec.ts';
import { API_VERSION, GROUP, KIND, LABELS, MANAGED_BY, PLURAL, VERSION } from './names.ts';

/** Immutable once created (the CRD refuses changes). */
export interface FfmpegCommandSpec {
  commandId: string;
  accountId: string;
  environment: string;
  commandType: CommandType;
  vcpuCount: number;
  maxCommandRunSeconds: number;
  /** How many steps (Jobs) the command runs: 1, or the chain's length. */
  steps: number;
  isPrivate: boolean;
  /** The submission as the client sent it. */
  request: Record<string, unknown>;
}

export interface FfmpegCommandOutput {
  alias: string;
  fileId: string;
  fileName: string;
  sizeBytes: number;
  storageKey: string;
}

/** Mirrors the command's row; written only through the status subresource. */
export interface FfmpegCommandStatus {
  phase: 'QUEUED' | 'PROCESSING' | 'SUCCESS' | 'FAILED';
  stage: ProcessingStage | '';
  currentStep: number;
  jobNames: string[];
  queuedAt: string;
  startedAt?: string | null;
  finishedAt?: string | null;
  durationSeconds: number;
  errorStatus?: ErrorStatus | '';
  errorMessage?: string;
  /**
   * How far ffmpeg is in the current step, as a poll shows it (percent: of the expected duration, null
   * when unknown); null, so absent, unless PROCESSING and ffmpeg has reported. Null members are not
   * kept (merge patch).
   */
  progress?: { percent: number | null; outTimeSeconds: number; speed: number | null } | null;
  outputs: FfmpegCommandOutput[];
  observedGeneration?: number;
}

export interface FfmpegCommandObject extends KubernetesObject {
  spec?: FfmpegCommandSpec;
  status?: FfmpegCommandStatus;
}

/** Creates a command's resource; returns its uid, or null when it existed already. */
export async function createFfmpegCommand(api: CustomObjectsApi, namespace: string, command: CommandRow): Promise<string | null> {
  const body: FfmpegCommandObject = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name: command.id,
      namespace,
      labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.commandId]: command.id, [LABELS.account]: command.accountId },
    },
    spec: {
      commandId: command.id,
      accountId: command.accountId,
      environment: command.environmentName,
      commandType: command.commandType,
      vcpuCount: command.vcpuCount,
      maxCommandRunSeconds: command.maxCommandRunSeconds,
      steps: command.steps.length,
      isPrivate: command.isPrivate,
      request: command.originalRequest,
    },
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
