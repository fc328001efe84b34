// Cluster-mode settings (on top of core/config.ts): where the resources live and how runners report.
import { hostname } from 'node:os';

/** A pod toleration, as Kubernetes spells it (checked here so a typo stops the operator at start, not every Job). */
export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

export interface ClusterConfig {
  namespace: string;
  /**
   * FFOP_WATCH_NAMESPACES: where the operator takes in FfmpegCommands that people make (kubectl, GitOps):
   * 'all', or a list of namespaces (its own always among them; empty: its own only).
   */
  watchNamespaces: 'all' | string[];
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
  /** Where runner pods may be scheduled (FFOP_RUNNER_NODE_SELECTOR, JSON object). */
  runnerNodeSelector: Record<string, string> | undefined;
  /** FFOP_RUNNER_TOLERATIONS, JSON array of tolerations. */
  runnerTolerations: Toleration[] | undefined;
  /** FFOP_RUNNER_PRIORITY_CLASS: priorityClassName of runner pods. */
  runnerPriorityClass: string | undefined;
  /** FFOP_RUNNER_HOST_NETWORK: runner pods use the node's network (single-node test clusters without a pod network). */
  runnerHostNetwork: boolean;
  /** FFOP_RUNNER_DISK_REQUEST: ephemeral storage a step asks for at least (a quantity; default 10Gi). */
  runnerDiskRequest: string | undefined;
  /** FFOP_RUNNER_DISK_LIMIT: the most a step may write (its work volume and ephemeral-storage limit; default 100Gi). */
  runnerDiskLimit: string | undefined;
  /** How steps wait for the cluster: FFOP_QUEUEING_MODE and its settings. */
  queueing: QueueingConfig;
}

export type QueueingConfig =
  | { mode: 'builtin'; maxPendingPods: number; maxVcpus: number | null; requeueAfterSeconds: number; retrySeconds: number }
  | { mode: 'kueue'; queueName: string; priorityClasses: Record<string, string> };

type Env = Record<string, string | undefined>;

export function loadClusterConfig(env: Env = process.env): ClusterConfig {
  const need = (name: string) => {
    const value = env[name];
    if (!value) throw new Error(`${name} must be set in cluster mode`);
    return value;
  };
  return {
    namespace: env.FFOP_NAMESPACE ?? 'ffmpeg-operator',
    watchNamespaces: watchNamespaces(env.FFOP_WATCH_NAMESPACES, env.FFOP_NAMESPACE ?? 'ffmpeg-operator'),
    runnerImage: env.FFOP_RUNNER_IMAGE ?? 'ffmpeg-operator-runner:latest',
    reportUrl: need('FFOP_REPORT_URL'),
    jobTokenSecret: need('FFOP_JOB_TOKEN_SECRET'),
    identity: env.POD_NAME ?? `${hostname()}-${process.pid}`,
    runnerMemoryLimit: env.FFOP_RUNNER_MEMORY_LIMIT || undefined,
    runnerConfinement: runnerConfinement(env.FFOP_RUNNER_CONFINEMENT),
    runnerNodeSelector: nodeSelector(env, 'FFOP_RUNNER_NODE_SELECTOR'),
    runnerTolerations: tolerations(env, 'FFOP_RUNNER_TOLERATIONS'),
    runnerPriorityClass: env.FFOP_RUNNER_PRIORITY_CLASS || undefined,
    runnerHostNetwork: bool(env, 'FFOP_RUNNER_HOST_NETWORK'),
    runnerDiskRequest: quantity(env, 'FFOP_RUNNER_DISK_REQUEST'),
    runnerDiskLimit: quantity(env, 'FFOP_RUNNER_DISK_LIMIT'),
    queueing: queueing(env),
  };
}

function queueing(env: Env): QueueingConfig {
  const mode = env.FFOP_QUEUEING_MODE?.trim() || 'builtin';
  if (mode === 'builtin') {
    return {
      mode,
      maxPendingPods: wholeNumber(env, 'FFOP_QUEUE_MAX_PENDING_PODS', 10) ?? 10,
      maxVcpus: wholeNumber(env, 'FFOP_QUEUE_MAX_VCPUS', null),
      requeueAfterSeconds: wholeNumber(env, 'FFOP_QUEUE_REQUEUE_AFTER_SECONDS', 10) ?? 10,
      retrySeconds: wholeNumber(env, 'FFOP_QUEUE_RETRY_SECONDS', 30) ?? 30,
    };
  }
  if (mode === 'kueue') {
    const queueName = env.FFOP_KUEUE_QUEUE_NAME?.trim();
    if (!queueName) throw new Error('FFOP_KUEUE_QUEUE_NAME (the LocalQueue of runner Jobs) must be set when FFOP_QUEUEING_MODE is kueue');
    return { mode, queueName, priorityClasses: planClasses(env, 'FFOP_KUEUE_PRIORITY_CLASSES') };
  }
  throw new Error(`FFOP_QUEUEING_MODE must be "builtin" or "kueue", got "${mode}"`);
}

/** A whole number of 1 or more; empty means the default. */
function wholeNumber<D extends number | null>(env: Env, name: string, fallback: D): number | D {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a whole number of 1 or more, got "${env[name]}"`);
  return Number(raw);
}

const QUANTITY = /^\d+(\.\d+)?(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;

function quantity(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!QUANTITY.test(raw)) throw new Error(`${name} must be a Kubernetes quantity of bytes such as 10Gi, got "${env[name]}"`);
  return raw;
}

/** `free=ffop-free,pro=ffop-pro`: each plan's Kueue WorkloadPriorityClass. */
function planClasses(env: Env, name: string): Record<string, string> {
  const classes: Record<string, string> = {};
  for (const pair of (env[name] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [plan, cls, extra] = pair.split('=').map((p) => p.trim());
    if (!plan || !cls || extra !== undefined)
      throw new Error(`${name} must be plan=class pairs separated by commas, e.g. free=ffop-free,pro=ffop-pro; got "${pair}"`);
    classes[plan] = cls;
  }
  return classes;
}

function runnerConfinement(raw: string | undefined): 'bwrap' | 'bwrap-or-pod' {
  if (raw === undefined || raw === '' || raw === 'bwrap-or-pod') return 'bwrap-or-pod';
  if (raw === 'bwrap') return 'bwrap';
  throw new Error(`FFOP_RUNNER_CONFINEMENT must be "bwrap" or "bwrap-or-pod", got "${raw}"`);
}

function bool(env: Env, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new Error(`${name} must be true or false, got "${env[name]}"`);
}

/** Parses a JSON setting; empty means unset. */
function json(env: Env, name: string, example: string): unknown {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  try {
    return JSON.parse(raw);
  } catch (err) {
    throw new Error(`${name} is not valid JSON (${(err as Error).message}); expected e.g. ${example}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function nodeSelector(env: Env, name: string): Record<string, string> | undefined {
  const example = `{"node-pool":"media"}`;
  const value = json(env, name, example);
  if (value === undefined) return undefined;
  if (!isObject(value)) throw new Error(`${name} must be a JSON object of label names to values, e.g. ${example}`);
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new Error(`${name}: the value of "${key}" must be a string, got ${JSON.stringify(v)}`);
  }
  return value as Record<string, string>;
}

const TOLERATION_FIELDS = new Set(['key', 'operator', 'value', 'effect', 'tolerationSeconds']);
const OPERATORS = ['Exists', 'Equal'];
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function tolerations(env: Env, name: string): Toleration[] | undefined {
  const example = `[{"key":"media","operator":"Exists","effect":"NoSchedule"}]`;
  const value = json(env, name, example);
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new Error(`${name} must be a JSON array of tolerations, e.g. ${example}`);
  value.forEach((t, i) => {
    const at = `${name}[${i}]`;
    if (!isObject(t)) throw new Error(`${at} must be an object, e.g. ${example}`);
    for (const [field, v] of Object.entries(t)) {
      if (!TOLERATION_FIELDS.has(field))
        throw new Error(`${at} has an unknown field "${field}" (known: ${[...TOLERATION_FIELDS].join(', ')})`);
      if (field === 'tolerationSeconds' ? !Number.isInteger(v) : typeof v !== 'string') {
        throw new Error(`${at}.${field} must be ${field === 'tolerationSeconds' ? 'an integer' : 'a string'}, got ${JSON.stringify(v)}`);
      }
    }
    if (t.operator !== undefined && !OPERATORS.includes(t.operator as string))
      throw new Error(`${at}.operator must be one of ${OPERATORS.join(', ')}, got ${JSON.stringify(t.operator)}`);
    if (t.effect !== undefined && t.effect !== '' && !EFFECTS.includes(t.effect as string))
      throw new Error(`${at}.effect must be one of ${EFFECTS.join(', ')}, got ${JSON.stringify(t.effect)}`);
  });
  return value as Toleration[];
}

/** Namespace names as Kubernetes allows them (RFC 1123 labels). */
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function watchNamespaces(value: string | undefined, own: string): 'all' | string[] {
  const text = (value ?? '').trim();
  if (text === '*') return 'all';
  const names = text === '' ? [] : text.split(',').map((n) => n.trim());
  for (const name of names) {
    if (name.length > 63 || !NAMESPACE_NAME.test(name)) {
      throw new Error(`FFOP_WATCH_NAMESPACES: ${JSON.stringify(name)} is not a namespace name (a comma-separated list, or * for all)`);
    }
  }
  return [...new Set([own, ...names])];
}
