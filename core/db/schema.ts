// One pg-core schema for both drivers (postgres.js against PostgreSQL, PGlite in embedded mode).
// Migrations in core/db/migrations are generated from this file by drizzle-kit.
import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  date,
  doublePrecision,
  index,
  uniqueIndex,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from 'drizzle-orm/pg-core';
import type { MediaInfo } from '../media/media-info.ts';
import type { ParsedCommand } from '../command-line/parsed-command.ts';
import type { CommandStatus, CommandType } from '../commands/command-status.ts';
import type { ErrorStatus } from '../commands/error-status.ts';
import type { FileStatus, StoreType } from '../files/file-status.ts';
import type { ProcessingStage } from '../jobs/step-spec.ts';
import type { StoredStepTiming } from '../commands/timings.ts';

/** What an account may do. Rows, so that an install sets its own limits (CLI: `plans create|set`). */
export const plans = pgTable('plans', {
  name: text('name').primaryKey(),
  maxVcpus: integer('max_vcpus').notNull(),
  maxCommandRunSeconds: integer('max_command_run_seconds').notNull(),
  requestsPerMinute: integer('requests_per_minute').notNull(),
  storageQuotaBytes: bigint('storage_quota_bytes', { mode: 'number' }).notNull(),
  processingQuotaBytesPerMonth: bigint('processing_quota_bytes_per_month', { mode: 'number' }).notNull(),
  privateFiles: boolean('private_files').notNull(),
  /** Queued commands of a plan of higher priority are started before those of a lower one (then oldest first). */
  priority: integer('priority').notNull().default(0),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export const accounts = pgTable('accounts', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull().unique(),
  // Before plans were rows, only 'free' and 'pro' could be written here, and the migration creates both.
  plan: text('plan')
    .notNull()
    .references(() => plans.name),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    // The public half of the key ("ffo_<id>_<secret>"): looked up by id, secret compared by hash.
    id: text('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    environment: text('environment').notNull(),
    secretHash: text('secret_hash').notNull(),
    label: text('label'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('api_keys_account_idx').on(t.accountId)],
);

/** One step of a command as the reconciler needs it: the validated command line of that step. */
export interface StoredStep {
  command: ParsedCommand;
}

/**
 * An output the client declared; its file id (and so its storage key) is fixed at submit time.
 * 'playlist' (alias out_playlist_*): an HLS/DASH manifest stored with its segments; 'folder': the
 * OUTPUT_FOLDER zip of everything the command wrote.
 */
export interface DeclaredOutput {
  alias: string;
  fileName: string;
  fileId: string;
  kind: 'file' | 'playlist' | 'folder';
}

/** ffmpeg's `-progress` of the running step; durationSeconds when the inputs' duration is known. */
export interface CommandProgress {
  outTimeSeconds: number;
  speed: number | null;
  durationSeconds: number | null;
}

export const commands = pgTable(
  'commands',
  {
    id: uuid('id').primaryKey(),
    // Arrival order for FIFO admission; created_at can tie.
    seq: bigserial('seq', { mode: 'number' }).notNull(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    environmentName: text('environment_name').notNull(),
    commandType: text('command_type').$type<CommandType>().notNull(),
    status: text('status').$type<CommandStatus>().notNull(),
    processingStage: text('processing_stage').$type<ProcessingStage>(),
    errorStatus: text('error_status').$type<ErrorStatus>(),
    errorMessage: text('error_message'),
    originalRequest: jsonb('original_request').$type<Record<string, unknown>>().notNull(),
    metadata: jsonb('metadata').$type<Record<string, string | number | boolean> | null>(),
    steps: jsonb('steps').$type<StoredStep[]>().notNull(),
    /** input_files as submitted: alias -> URL. */
    inputs: jsonb('inputs').$type<Record<string, string>>().notNull(),
    /** input_compressed_folder: URL of a zip extracted into the working folder. */
    inputArchiveUrl: text('input_archive_url'),
    outputs: jsonb('outputs').$type<DeclaredOutput[]>().notNull(),
    vcpuCount: integer('vcpu_count').notNull(),
    maxCommandRunSeconds: doublePrecision('max_command_run_seconds').notNull(),
    isPrivate: boolean('is_private').notNull(),
    currentStep: integer('current_step').notNull().default(0),
    /** Incremented each time a step is (re)started, so job names stay unique per attempt. */
    attempt: integer('attempt').notNull().default(0),
    /** Times the current step ran again because its job was lost (a restart, a node that died or was drained). */
    stepRetries: integer('step_retries').notNull().default(0),
    /** Why a command that had started waits in the queue again (cluster mode: its pod found no node), or null. */
    queueReason: text('queue_reason'),
    /**
     * Cluster mode with Kueue: the QUEUED command's step has its Job, made suspended, and waits for Kueue
     * to resume it (it counts against its account's plan like a running one).
     */
    inClusterQueue: boolean('in_cluster_queue').notNull().default(false),
    ffmpegSeconds: doublePrecision('ffmpeg_seconds').notNull().default(0),
    processedBytes: bigint('processed_bytes', { mode: 'number' }).notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    /** Cluster mode: when its FfmpegCommand resource was created (null: not yet; the operator creates it). */
    resourceCreatedAt: timestamp('resource_created_at', { withTimezone: true, precision: 3 }),
    /**
     * A command taken in from an FfmpegCommand someone else made (kubectl, GitOps): that resource's namespace
     * and name. Null for the HTTP API's, whose resource is named after the command in the operator's namespace.
     */
    resourceNamespace: text('resource_namespace'),
    resourceName: text('resource_name'),
    startedAt: timestamp('started_at', { withTimezone: true, precision: 3 }),
    finishedAt: timestamp('finished_at', { withTimezone: true, precision: 3 }),
    /** How far ffmpeg is in the current step (runner progress events); null before ffmpeg starts. */
    progress: jsonb('progress').$type<CommandProgress | null>(),
    /** `POST /v1/commands/{id}/cancel` on a running command: the reconciler stops its job and fails it. */
    cancelRequestedAt: timestamp('cancel_requested_at', { withTimezone: true, precision: 3 }),
    /** `POST /v1/commands/{id}/retry`: the FAILED command this one runs again (migration 0012: unique, a foreign key). */
    retryOf: uuid('retry_of'),
    /** The command that runs this FAILED one again; set by a trigger when that one is stored (migration 0012). */
    retriedBy: uuid('retried_by'),
    /** Each ended step's timings, written with its result (core/commands/timings.ts); null before the first ends. */
    timings: jsonb('timings').$type<StoredStepTiming[] | null>(),
    /** When the current step started (its job was started, or released by the cluster's queue); null while it waits. */
    stepStartedAt: timestamp('step_started_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [
    index('commands_account_created_idx').on(t.accountId, t.createdAt),
    // The queue's estimate counts recent starts (queue-snapshot.ts).
    index('commands_started_at_idx')
      .on(t.startedAt)
      .where(sql`${t.startedAt} is not null`),
    // The reconciler scans only unfinished commands.
    index('commands_active_idx')
      .on(t.status, t.seq)
      .where(sql`${t.status} in ('QUEUED', 'PROCESSING')`),
    // The admission read takes each account's oldest QUEUED commands (commands-repo.ts, admissibleSql).
    index('commands_queued_account_idx')
      .on(t.accountId, t.seq)
      .where(sql`${t.status} = 'QUEUED' and not ${t.inClusterQueue}`),
    uniqueIndex('commands_retry_of_idx')
      .on(t.retryOf)
      .where(sql`${t.retryOf} is not null`),
  ],
);

export const files = pgTable(
  'files',
  {
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    environmentName: text('environment_name').notNull(),
    commandId: uuid('command_id').references(() => commands.id),
    /** Output alias for command outputs (out_1, OUTPUT_FOLDER). */
    alias: text('alias'),
    serviceStoreType: text('service_store_type').$type<StoreType>().notNull(),
    status: text('status').$type<FileStatus>().notNull(),
    errorStatus: text('error_status').$type<ErrorStatus>(),
    errorMessage: text('error_message'),
    storageKey: text('storage_key').notNull(),
    fileName: text('file_name').notNull(),
    originalFileUrl: text('original_file_url'),
    isPrivate: boolean('is_private').notNull(),
    isDeleted: boolean('is_deleted').notNull().default(false),
    sizeBytes: bigint('size_bytes', { mode: 'number' }),
    /** Folder and playlist outputs: how many files, and the size of their zip. */
    fileCount: integer('file_count'),
    sizeCompressedBytes: bigint('size_compressed_bytes', { mode: 'number' }),
    media: jsonb('media').$type<MediaInfo | null>(),
    /** Direct uploads: the storage backend's multipart upload id, the part size and the announced size. */
    uploadId: text('upload_id'),
    partSize: bigint('part_size', { mode: 'number' }),
    expectedSizeBytes: bigint('expected_size_bytes', { mode: 'number' }),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('files_command_idx').on(t.commandId),
    index('files_account_created_idx').on(t.accountId, t.createdAt),
    // Background work (probing, store-file downloads, stale-upload cleanup) scans unfinished files.
    index('files_pending_idx')
      .on(t.status, t.createdAt)
      .where(sql`${t.status} in ('QUEUED', 'DOWNLOADING', 'DOWNLOADED', 'UPLOADED')`),
  ],
);

/**
 * Runner events of cluster-mode Jobs. A runner pod has no database access: it POSTs its events to
 * the API (authenticated by a token scoped to its one Job), the API stores them here, and the
 * operator's Kubernetes job backend reads them in order. Removed when the operator deletes the Job.
 */
export const jobEvents = pgTable(
  'job_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    jobName: text('job_name').notNull(),
    event: jsonb('event').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('job_events_job_idx').on(t.jobName),
    // One result per Job: a replay with the Job's token is refused here too (migration 0010).
    uniqueIndex('job_events_one_result_idx')
      .on(t.jobName)
      .where(sql`${t.event}->>'type' = 'result'`),
  ],
);

/** One webhook per account and environment: where ended commands and stored files are announced. */
export const webhooks = pgTable(
  'webhooks',
  {
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    environmentName: text('environment_name').notNull(),
    url: text('url').notNull(),
    /** Standard Webhooks signing secret, "whsec_" + base64 of 24 random bytes. */
    secret: text('secret').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.environmentName] })],
);

/** One attempt to deliver a webhook message, as the delivery log shows it. */
export interface WebhookAttempt {
  at: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * Webhook messages, written by database triggers in the same transaction as the change they announce
 * (a command ending, a stored file reaching STORED or FAILED), so none is lost; a worker sends them.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    /** The Standard Webhooks message id ("msg_" + this), the same on every retry. */
    id: uuid('id').primaryKey(),
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id),
    environmentName: text('environment_name').notNull(),
    /** command.finished, file.finished, webhook.test */
    eventType: text('event_type').notNull(),
    subjectId: uuid('subject_id'),
    /** The JSON body, fixed at the first attempt so that every retry sends the same bytes. */
    payload: text('payload'),
    /** PENDING, DELIVERED, FAILED */
    status: text('status').notNull(),
    attempts: jsonb('attempts')
      .$type<WebhookAttempt[]>()
      .notNull()
      .default(sql`'[]'::jsonb`),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, precision: 3 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true, precision: 3 }),
  },
  (t) => [
    index('webhook_deliveries_account_idx').on(t.accountId, t.environmentName, t.createdAt),
    index('webhook_deliveries_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'PENDING'`),
    // Pruning finds deliveries past their retention without reading the table.
    index('webhook_deliveries_finished_idx')
      .on(t.finishedAt)
      .where(sql`${t.finishedAt} is not null`),
  ],
);

/**
 * Bytes each account keeps in storage (live files, and announced sizes of uploads in progress), kept
 * by a trigger on `files` (migration 0006) so that a quota check reads one row, not every file.
 */
export const accountStorage = pgTable('account_storage', {
  accountId: uuid('account_id').primaryKey(),
  storedBytes: bigint('stored_bytes', { mode: 'number' }).notNull().default(0),
});

/** Bytes each account's commands processed, per UTC month of their creation, kept by a trigger on `commands`. */
export const accountMonthlyProcessing = pgTable(
  'account_monthly_processing',
  {
    accountId: uuid('account_id').notNull(),
    /** The first day of the month (UTC). */
    month: date('month', { mode: 'string' }).notNull(),
    processedBytes: bigint('processed_bytes', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.month] })],
);

/**
 * Idempotency keys of the creating POSTs (core/idempotency): the first request with a key claims its
 * row; its answer (2xx and 4xx but 429) is kept for 24 hours and answered again to a repeat.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    /** The API key that sent it (api_keys.id): keys are scoped by it. */
    apiKeyId: text('api_key_id').notNull(),
    key: text('key').notNull(),
    /** sha256 of the method, path and body bytes: a repeat must be the same request. */
    fingerprint: text('fingerprint').notNull(),
    /** Who holds the claim: only its holder stores the answer or removes the claim. */
    claim: uuid('claim').notNull(),
    /** While no answer is stored, another request may take the claim over after this. */
    leaseUntil: timestamp('lease_until', { withTimezone: true, precision: 3 }).notNull(),
    responseStatus: integer('response_status'),
    responseContentType: text('response_content_type'),
    responseBody: text('response_body'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.apiKeyId, t.key] }), index('idempotency_keys_created_idx').on(t.createdAt)],
);

/** ffmpeg's stderr of each step (0-based), the last 1 MiB of it (core/commands/command-logs-repo.ts, migration 0014). */
export const commandLogs = pgTable(
  'command_logs',
  {
    commandId: uuid('command_id')
      .notNull()
      .references(() => commands.id, { onDelete: 'cascade' }),
    step: integer('step').notNull(),
    text: text('text').notNull(),
    /** Characters cut from the start to keep the last 1 MiB. */
    cutChars: bigint('cut_chars', { mode: 'number' }).notNull().default(0),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.commandId, t.step] })],
);
