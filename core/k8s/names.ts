// Names shared by the CRD, the RBAC manifests, the operator, the API and the test node agent.
export const GROUP = 'ffmpeg-operator.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'FfmpegCommand';
export const PLURAL = 'ffmpegcommands';
export const SHORT_NAME = 'ffc';

export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  commandId: `${GROUP}/command-id`,
  step: `${GROUP}/step`,
  account: `${GROUP}/account`,
} as const;
export const MANAGED_BY = 'ffmpeg-operator';

/** The Job's one container; the test node agent runs it as a local runner process. */
export const RUNNER_CONTAINER = 'runner';

export const SERVICE_ACCOUNTS = {
  operator: 'ffmpeg-operator',
  api: 'ffmpeg-operator-api',
  runner: 'ffmpeg-operator-runner',
} as const;

/** The Lease two operator replicas compete for. */
export const LEADER_LEASE = 'ffmpeg-operator-leader';
