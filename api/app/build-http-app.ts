// What both modes build around the HTTP app (create-app.ts): the poll and key caches that the
// database's notifications keep current, the webhook worker and the app itself. A mode passes what
// differs: what a submitted command sets off, which storage routes it serves, whether runners report
// here, whether /metrics is on the public port.
import { CommandLogsRepo, DEFAULT_LOG_RETENTION_MS } from '../../core/commands/command-logs-repo.ts';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { watchKeyChanges } from '../../core/accounts/key-cache.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { watchedPollCache } from '../../core/commands/poll-cache.ts';
import { loadQueueState, QueueSnapshot } from '../../core/commands/queue-snapshot.ts';
import type { Database } from '../../core/db/database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import type { Metrics } from '../../core/metrics/metrics.ts';
import { createAddressPolicy } from '../../core/net/address-policy.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { WebhooksRepo } from '../../core/webhooks/webhooks-repo.ts';
import { IdempotencyKeysRepo } from '../../core/idempotency/idempotency-keys-repo.ts';
import { startWebhookWorker, type WebhookWorker } from '../webhooks/webhook-worker.ts';
import { createApp, type AppDeps } from './create-app.ts';
import type { CommandEventHub } from '../../core/commands/command-event-hub.ts';
import { watchEventStreams, type EventStreamLimits, type WatchedEventStreams } from '../events/watch-event-streams.ts';

/** The repositories a mode shares with its HTTP app. */
export interface ServiceRepos {
  accounts: AccountsRepo;
  commands: CommandsRepo;
  files: FilesRepo;
}

export function createServiceRepos(database: Database): ServiceRepos {
  return { accounts: new AccountsRepo(database.db), commands: new CommandsRepo(database.db), files: new FilesRepo(database.db) };
}

export interface HttpAppOptions extends Pick<
  AppDeps,
  | 'dispatch'
  | 'cancelRequested'
  | 'kickFileTasks'
  | 'uploadTtlSeconds'
  | 'storageRoutes'
  | 'jobEventRoutes'
  | 'maxBodyBytes'
  | 'trustedProxies'
  | 'metricsEndpoint'
> {
  database: Database;
  repos: ServiceRepos;
  storage: Storage;
  logger: Logger;
  /** HTTP latency and webhook deliveries are recorded here. */
  metrics: Metrics;
  /** FFOP_WEBHOOK_ALLOW_ADDRESSES: exceptions to the SSRF guard of webhook URLs. */
  webhookAllowAddresses: string[];
  /** FFOP_WEBHOOK_RETENTION_SECONDS, in ms; the worker's default when absent. */
  webhookRetentionMs?: number;
  /** FFOP_LOG_RETENTION_DAYS, in ms: ffmpeg's logs are kept this long after their command ended (default 7 days). */
  logRetentionMs?: number;
  /** QUEUED commands show queue_position (false in cluster mode with Kueue, which decides the order). Default true. */
  queuePositions?: boolean;
  /** The event streams' limits (FFOP_MAX_EVENT_STREAMS_PER_KEY, FFOP_MAX_EVENT_STREAMS). */
  eventStreams?: EventStreamLimits;
}

export interface HttpApp {
  app: Hono;
  /** Sends webhook deliveries (in cluster mode every API replica claims different ones). */
  webhookWorker: WebhookWorker;
  /** Ends every open event stream: before the server's close, which waits for open responses. */
  closeEventStreams(): void;
  /** Stops the webhook worker and the caches' watches (not the server, nor the database). */
  close(): Promise<void>;
}

export async function buildHttpApp(o: HttpAppOptions): Promise<HttpApp> {
  const { accounts, commands, files } = o.repos;
  // Command states may be written by another process (the operator, another replica): the database's
  // notifications keep the poll cache and the key cache current.
  const idempotencyKeys = new IdempotencyKeysRepo(o.database.db);
  const commandLogs = new CommandLogsRepo(o.database.db);
  const logRetentionMs = o.logRetentionMs ?? DEFAULT_LOG_RETENTION_MS;
  // The event streams' hub hears of a change after the poll cache forgot it, so its read is current.
  let hub: CommandEventHub | undefined;
  const polls = await watchedPollCache(o.database, commands, { onChanged: (id) => hub?.changed(id), onResync: () => hub?.resync() });
  let stopKeyWatch: (() => Promise<void>) | undefined;
  let events: WatchedEventStreams | undefined;
  let webhookWorker: WebhookWorker;
  try {
    stopKeyWatch = await watchKeyChanges(o.database);
    events = await watchEventStreams({
      database: o.database,
      read: polls.find,
      storage: o.storage,
      logger: o.logger,
      limits: o.eventStreams,
    });
    hub = events.hub;
    webhookWorker = await startWebhookWorker({
      database: o.database,
      commands,
      files,
      storage: o.storage,
      logger: o.logger,
      allowAddresses: o.webhookAllowAddresses,
      retentionMs: o.webhookRetentionMs,
      onAttempt: (outcome) => o.metrics.webhookAttempt(outcome),
      alsoPrune: [
        { what: 'expired idempotency keys', prune: (batch) => idempotencyKeys.pruneExpired(new Date(), batch) },
        {
          what: "ffmpeg's logs past their retention",
          prune: (batch) => commandLogs.pruneEndedBefore(new Date(Date.now() - logRetentionMs), batch),
        },
      ],
    });
  } catch (err) {
    // The caller gets no close() to call: what started here stops here.
    await events?.stop();
    await stopKeyWatch?.();
    await polls.stop();
    throw err;
  }
  const stopKeys = stopKeyWatch;
  const queue = o.queuePositions === false ? null : new QueueSnapshot({ load: (since) => loadQueueState(o.database.pollReads, since) });
  const eventStreams = events;
  const app = createApp({
    accounts,
    commands,
    readCommand: polls.find,
    insertCommand: polls.insert,
    listCommands: polls.list,
    queueView: queue ? (command) => queue.view(command) : undefined,
    files,
    idempotencyKeys,
    commandLogs,
    logRetentionMs,
    storage: o.storage,
    logger: o.logger,
    dispatch: o.dispatch,
    cancelRequested: o.cancelRequested,
    kickFileTasks: o.kickFileTasks,
    uploadTtlSeconds: o.uploadTtlSeconds,
    storageRoutes: o.storageRoutes,
    jobEventRoutes: o.jobEventRoutes,
    maxBodyBytes: o.maxBodyBytes,
    trustedProxies: o.trustedProxies,
    metrics: o.metrics,
    metricsEndpoint: o.metricsEndpoint,
    webhooks: { webhooks: new WebhooksRepo(o.database.db), addressPolicy: createAddressPolicy(o.webhookAllowAddresses) },
    health: o.database.health,
    eventStreams: eventStreams.streams,
  });
  return {
    app,
    webhookWorker,
    closeEventStreams: () => eventStreams.streams.closeAll(),
    close: async () => {
      await eventStreams.stop();
      await webhookWorker.stop();
      await polls.stop();
      await stopKeys();
    },
  };
}
