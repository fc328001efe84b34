// Cluster-mode settings (on top of core/config.ts): where the resources live and how runners report.
import { hostname } from 'node:os';

export interface ClusterConfig {
  namespace: string;
  runnerImage: string;
  /** The API's job-events endpoint as runner pods reach it, e.g. http://ffmpeg-operator-api:8080/internal/v1/job-events. */
  reportUrl: string;
  /** Shared by the API and the operator: signs each runner's job-scoped token. */
  jobTokenSecret: string;
  identity: string;
  /** The runner container's memory limit (a Kubernetes quantity); default ffmpeg's rlimit + 512Mi. */
  runnerMemoryLimit: string | undefined;
  /** 'bwrap': runner pods must confine ffmpeg with bubblewrap; 'bwrap-or-pod': the pod is the boundary where they cannot. */
  runnerConfinement: 'bwrap' | 'bwrap-or-pod';
}

export function loadClusterConfig(env: Record<string, string | undefined> = process.env): ClusterConfig {
  const need = (name: string) => {
    const value = env[name];
    if (!value) throw new Error(`${name} must be set in cluster mode`);
    return value;
  };
  return {
    namespace: env.FFOP_NAMESPACE ?? 'ffmpeg-operator',
    runnerImage: env.FFOP_RUNNER_IMAGE ?? 'ffmpeg-operator-runner:latest',
    reportUrl: need('FFOP_REPORT_URL'),
    jobTokenSecret: need('FFOP_JOB_TOKEN_SECRET'),
    identity: env.POD_NAME ?? `${hostname()}-${process.pid}`,
    runnerMemoryLimit: env.FFOP_RUNNER_MEMORY_LIMIT || undefined,
    runnerConfinement: runnerConfinement(env.FFOP_RUNNER_CONFINEMENT),
  };
}

function runnerConfinement(raw: string | undefined): 'bwrap' | 'bwrap-or-pod' {
  if (raw === undefined || raw === '' || raw === 'bwrap-or-pod') return 'bwrap-or-pod';
  if (raw === 'bwrap') return 'bwrap';
  throw new Error(`FFOP_RUNNER_CONFINEMENT must be "bwrap" or "bwrap-or-pod", got "${raw}"`);
}
