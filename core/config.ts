// Settings come from environment variables (all optional); docs/settings.md lists them.
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_MEMORY_BYTES } from './confine/limits.ts';
import { DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_OUTPUT_FILES } from './jobs/step-spec.ts';
import { MAX_PRESIGN_TTL_SECONDS } from './storage/storage.ts';
import { DEFAULT_UID_BASE, DEFAULT_UID_COUNT } from './confine/uid-pool.ts';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string;
  publicUrl: string;
  storage: 'local' | 's3';
  storageDir: string;
  s3: { endpoint: string; region: string; bucket: string; accessKey: string; secretKey: string } | null;
  workDir: string;
  signingKey: string | null;
  /** FFOP_ALLOW_ADDRESSES: SSRF exceptions for input downloads. */
  allowAddresses: string[];
  /** FFOP_WEBHOOK_ALLOW_ADDRESSES: SSRF exceptions for webhook URLs; webhooks do not inherit the downloads' list. */
  webhookAllowAddresses: string[];
  /** FFOP_WEBHOOK_RETENTION_SECONDS: delivered and failed webhook deliveries are deleted this long after they ended. */
  webhookRetentionSeconds: number;
  /** FFOP_LOG_RETENTION_DAYS: ffmpeg's log of a command is kept this long after the command ended (GET /v1/commands/{id}/log). */
  logRetentionDays: number;
  /** Reverse proxies (exact addresses) whose X-Forwarded-For names the client, for the failed-key limit. */
  trustedProxies: string[];
  downloadMaxBytes: number;
  downloadTimeoutSeconds: number;
  uploadAllowanceSeconds: number;
  localMaxVcpus: number;
  /** rlimit on every file ffmpeg writes. */
  maxOutputFileBytes: number;
  /** Most files one playlist or OUTPUT_FOLDER output may hold. */
  maxOutputFiles: number;
  /** rlimit on the address space of every ffmpeg and ffprobe run. */
  maxMemoryBytes: number;
  /** FFOP_UNSAFE_NO_CONFINEMENT=1: run ffmpeg without the sandbox (trusted users only). */
  unsafeNoConfinement: boolean;
  /** A prebuilt seccomp program; generated into the data folder when unset. */
  seccompProgram: string | undefined;
  /** As root, confined runs take uids from [base, base + count). */
  sandboxUidBase: number;
  sandboxUidCount: number;
  /** Direct uploads neither completed nor aborted are cleaned up after this long (default 7 days). */
  abandonedUploadSeconds: number;
  /** Uploads that received no part for this long are cleaned up before abandonedUploadSeconds (default 1 day). */
  idleUploadSeconds: number;
  /** Bytes uploads and stored outputs must leave free on the storage's disk (local storage); else 507. */
  diskReserveBytes: number;
  maxBodyBytes: number;
  /** FFOP_MAX_EVENT_STREAMS_PER_KEY: open event streams (GET /v1/commands/{id}/events) per API key, per process. */
  maxEventStreamsPerKey: number;
  /** FFOP_MAX_EVENT_STREAMS: open event streams of the whole process. */
  maxEventStreams: number;
  /** FFOP_EVENT_STREAM_LIFETIME_SECONDS: an event stream closes after this long (the client resumes with Last-Event-ID). */
  eventStreamLifetimeSeconds: number;
  logLevel: string;
  defaultAccount: string;
  /** FFOP_METRICS_TOKEN: when set, /metrics needs `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** FFOP_METRICS_HOST: where cluster mode's metrics servers listen. */
  metricsHost: string;
  /** FFOP_METRICS_PORT: cluster mode's metrics port; null: the process's default; 'off': no metrics server. */
  metricsPort: number | 'off' | null;
}

type Env = Record<string, string | undefined>;

function num(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

function nonNegative(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number of 0 or more, got "${raw}"`);
  return n;
}

/** "1" or "true" turns a setting on; anything else but empty or "0"/"false" is a mistake worth stopping for. */
function flag(env: Env, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new Error(`${name} must be 1 or 0, got "${env[name]}"`);
}

/** A comma-separated list, empty entries dropped. */
function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function required(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`${name} must be set`);
  return value;
}

function storageKind(raw: string | undefined): 'local' | 's3' {
  if (raw === undefined || raw === '' || raw === 'local') return 'local';
  if (raw === 's3') return 's3';
  throw new Error(`FFOP_STORAGE must be "local" or "s3", got "${raw}"`);
}

export function loadConfig(env: Env = process.env): Config {
  const host = env.FFOP_HOST ?? '127.0.0.1';
  // Port 0 picks a free port (tests).
  const port = env.FFOP_PORT === '0' ? 0 : num(env, 'FFOP_PORT', 8080);
  const dataDir = resolve(env.FFOP_DATA_DIR ?? './data');
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    host,
    port,
    dataDir,
    databaseUrl: env.FFOP_DATABASE_URL ?? `pglite:${join(dataDir, 'db')}`,
    publicUrl: (env.FFOP_PUBLIC_URL ?? `http://${urlHost}:${port}`).replace(/\/+$/, ''),
    storage: storageKind(env.FFOP_STORAGE),
    storageDir: env.FFOP_STORAGE_DIR ?? join(dataDir, 'storage'),
    s3: env.FFOP_S3_ENDPOINT
      ? {
          endpoint: env.FFOP_S3_ENDPOINT,
          region: env.FFOP_S3_REGION ?? 'us-east-1',
          bucket: required(env, 'FFOP_S3_BUCKET'),
          accessKey: required(env, 'FFOP_S3_ACCESS_KEY'),
          secretKey: required(env, 'FFOP_S3_SECRET_KEY'),
        }
      : null,
    workDir: env.FFOP_WORK_DIR ?? join(dataDir, 'work'),
    signingKey: env.FFOP_SIGNING_KEY ?? null,
    allowAddresses: list(env.FFOP_ALLOW_ADDRESSES),
    webhookAllowAddresses: list(env.FFOP_WEBHOOK_ALLOW_ADDRESSES),
    webhookRetentionSeconds: num(env, 'FFOP_WEBHOOK_RETENTION_SECONDS', 30 * 86400),
    logRetentionDays: num(env, 'FFOP_LOG_RETENTION_DAYS', 7),
    trustedProxies: list(env.FFOP_TRUSTED_PROXIES),
    downloadMaxBytes: num(env, 'FFOP_DOWNLOAD_MAX_BYTES', 4 * 1024 ** 3),
    downloadTimeoutSeconds: num(env, 'FFOP_DOWNLOAD_TIMEOUT_SECONDS', 900),
    uploadAllowanceSeconds: num(env, 'FFOP_UPLOAD_ALLOWANCE_SECONDS', 900),
    localMaxVcpus: num(env, 'FFOP_LOCAL_MAX_VCPUS', availableParallelism()),
    maxOutputFileBytes: num(env, 'FFOP_MAX_OUTPUT_FILE_BYTES', DEFAULT_MAX_OUTPUT_FILE_BYTES),
    maxOutputFiles: num(env, 'FFOP_MAX_OUTPUT_FILES', DEFAULT_MAX_OUTPUT_FILES),
    maxMemoryBytes: num(env, 'FFOP_MAX_MEMORY_BYTES', DEFAULT_MEMORY_BYTES),
    unsafeNoConfinement: flag(env, 'FFOP_UNSAFE_NO_CONFINEMENT'),
    seccompProgram: env.FFOP_SECCOMP_PROGRAM || undefined,
    sandboxUidBase: num(env, 'FFOP_SANDBOX_UID_BASE', DEFAULT_UID_BASE),
    sandboxUidCount: num(env, 'FFOP_SANDBOX_UID_COUNT', DEFAULT_UID_COUNT),
    abandonedUploadSeconds: num(env, 'FFOP_ABANDONED_UPLOAD_SECONDS', 7 * 86400),
    idleUploadSeconds: num(env, 'FFOP_IDLE_UPLOAD_SECONDS', 86400),
    diskReserveBytes: nonNegative(env, 'FFOP_DISK_RESERVE_BYTES', 128 * 1024 * 1024),
    maxBodyBytes: num(env, 'FFOP_MAX_BODY_BYTES', 1024 * 1024),
    maxEventStreamsPerKey: num(env, 'FFOP_MAX_EVENT_STREAMS_PER_KEY', 20),
    maxEventStreams: num(env, 'FFOP_MAX_EVENT_STREAMS', 5_000),
    eventStreamLifetimeSeconds: num(env, 'FFOP_EVENT_STREAM_LIFETIME_SECONDS', 3_600),
    logLevel: env.FFOP_LOG_LEVEL ?? 'info',
    defaultAccount: env.FFOP_DEFAULT_ACCOUNT ?? 'default',
    metricsToken: env.FFOP_METRICS_TOKEN || null,
    metricsHost: env.FFOP_METRICS_HOST || '127.0.0.1',
    metricsPort: metricsPort(env.FFOP_METRICS_PORT),
  };
}

/** Port 0 picks a free port (tests); "off" runs no metrics server. */
function metricsPort(raw: string | undefined): number | 'off' | null {
  if (raw === undefined || raw === '') return null;
  if (raw === 'off') return 'off';
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`FFOP_METRICS_PORT must be a port number or "off", got "${raw}"`);
  return n;
}

/** Upload URLs live as long as an upload may stay open, within what a presigned URL allows. */
export function uploadUrlTtlSeconds(config: Pick<Config, 'abandonedUploadSeconds'>): number {
  return Math.min(config.abandonedUploadSeconds, MAX_PRESIGN_TTL_SECONDS);
}
