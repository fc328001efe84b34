// How a command step runs: as a Kubernetes Job (cluster mode) or a child process (embedded mode).
// The reconciler talks only to this interface; both backends pass core/engine/testing/job-backend-contract.ts.
import type { RunnerEvent, StepSpec } from '../jobs/step-spec.ts';

import type { JobRef } from '../jobs/job-name.ts';
export type { JobRef };

export interface JobRequest {
  ref: JobRef;
  spec: StepSpec;
  vcpus: number;
  /** Wall-clock limit for the whole step (downloads + ffmpeg + uploads), like activeDeadlineSeconds. */
  deadlineSeconds: number;
  accountId: string;
}

export type JobListener = (ref: JobRef, event: RunnerEvent) => void;

export interface JobBackend {
  /** Starts the job unless a job with that name exists already. */
  ensureJob(request: JobRequest): Promise<void>;
  /** Names of jobs that exist: running, or finished and not yet deleted. */
  listJobNames(): Promise<Set<string>>;
  /** Stops a job if it runs and forgets it. Unknown names are fine. */
  deleteJob(name: string): Promise<void>;
  /** Runner events (stages, progress, the final result) of every job. */
  subscribe(listener: JobListener): void;
  /** How many vCPUs this backend can run at once; null when a scheduler outside decides (Kubernetes). */
  readonly capacityVcpus: number | null;
  close(): Promise<void>;
}

export { jobName, JOB_NAME_PATTERN, parseJobName } from '../jobs/job-name.ts';
