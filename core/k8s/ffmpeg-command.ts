// The FfmpegCommand resource as crds/ffmpegcommand.yaml defines it: one type for the operator that
// writes it, the API that creates it and the CRD test that checks the API server agrees.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { CommandType } from '../commands/command-status.ts';
import type { ErrorStatus } from '../commands/error-status.ts';
import type { ProcessingStage } from '../jobs/step-spec.ts';

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
  outputs: FfmpegCommandOutput[];
  observedGeneration?: number;
}

export interface FfmpegCommandObject extends KubernetesObject {
  spec?: FfmpegCommandSpec;
  status?: FfmpegCommandStatus;
}
