// Names shared by the CRD, the RBAC manifests, the operator, the API and the test node agent.
export const GROUP = 'ffmpeg-operator.dev';
export const VERSION = 'v1beta1';
/** The version before v1beta1: still served (crds/ffmpegcommand.yaml), objects made by earlier releases keep working. */
export const LEGACY_VERSION = 'v1alpha1';
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

/**
 * Labels on a Namespace that bind it to an account: FfmpegCommands created there (with kubectl, GitOps...)
 * run for that account and environment. Set by a cluster admin; namespace users cannot change them.
 */
export const NAMESPACE_BINDING = {
  account: `${GROUP}/account`,
  environment: `${GROUP}/environment`,
} as const;
export const DEFAULT_BOUND_ENVIRONMENT = 'main';
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
