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
  /** The account's plan (cluster mode with Kueue: it picks the Job's priority class). */
  plan?: string;
  /** Bytes of the step's inputs that are known before it runs (outputs of earlier steps), to size its disk. */
  knownInputBytes?: number;
}

/**
 * What a backend itself says about a job, beside its runner's events:
 * - `requeue`: the job was released but its pod finds no room (cluster mode); the step goes back to
 *   the queue and its job is deleted, so no deadline runs while it waits;
 * - `lost`: the job's pod was lost with no result of its own (its node died or was drained, the pod
 *   was evicted or preempted); the step runs again as its next attempt.
 */
export type BackendEvent =
  | { type: 'requeue'; reason: string }
  /** maxStarts: the most times the step may start in all before the command fails (default: the reconciler's maxAttempts). */
  | { type: 'lost'; reason: string; maxStarts?: number }
  /** Kueue mode: the cluster's queue resumed the step's suspended Job (it runs now), or suspended it again (preempted, evicted). */
  | { type: 'released' }
  | { type: 'suspended'; reason: string };

export type JobListener = (ref: JobRef, event: RunnerEvent | BackendEvent) => void;

/**
 * Cluster mode's admission step (queueing.mode builtin): the reconciler releases queued steps only as
 * fast as the cluster shows room for their pods.
 */
export interface ReleaseGate {
  /** How many more steps may be released now: 0 while a released pod waits for room. */
  releasable(): number;
  /** At most this many vCPUs run at once (a share of a shared cluster), or null for no cap. */
  readonly maxVcpus: number | null;
  /** Calls `listener` when the gate may have opened: a pod ended, a node came or changed, or a retry is due. */
  onMayOpen(listener: () => void): void;
}

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
  /** When set, steps are released through it (cluster mode); otherwise capacityVcpus decides. */
  readonly releaseGate?: ReleaseGate;
  /**
   * Jobs are made suspended and wait in the cluster's own queue (Kueue), which releases them: the
   * command stays QUEUED until the backend reports `released`.
   */
  readonly queuesInCluster?: boolean;
  /** Why this step can never run on any node of the cluster (it asks more than the largest has), or null. */
  unfit?(request: Pick<JobRequest, 'vcpus' | 'knownInputBytes'>): string | null;
  /** The most vCPUs a step can ask and still fit a node (null: no node known); larger ones fail at once. */
  maxStepVcpus?(): number | null;
  close(): Promise<void>;
}

export { jobName, JOB_NAME_PATTERN, parseJobName } from '../jobs/job-name.ts';
