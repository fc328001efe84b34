// Cluster mode's API: the same HTTP app, with PostgreSQL, S3 (or a shared local folder in tests),
// and a dispatch that turns each stored command into an FfmpegCommand resource. It runs nothing
// itself: the operator does. Polls and lists are served from the database, never from Kubernetes.
import { KeepAliveKubeConfig } from '../../core/k8s/keep-alive-kubeconfig.ts';
import type { AddressInfo } from 'node:net';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Database } from '../../core/db/database.ts';
import { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { createCommandResource } from '../../core/k8s/command-resource.ts';
import { listen } from '../app/listen.ts';
import { buildHttpApp, createServiceRepos } from '../app/build-http-app.ts';
import type { EventStreamLimits } from '../events/watch-event-streams.ts';
import type { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import type { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { DEFAULT_REPORT_LIMITS, jobEventRoutes, type ReportLimits } from '../routes/job-events.ts';
import { createMetrics } from '../../core/metrics/metrics.ts';
import { startMetricsServer, type MetricsServerOptions } from '../../core/metrics/metrics-server.ts';

export interface ClusterApiOptions {
  kubeconfig: KubeConfig;
  namespace: string;
  database: Database;
  storage: Storage;
  storageRoutes?: Hono;
  logger: Logger;
  tokenSecret: string;
  host: string;
  port: number;
  /** Reverse proxies whose X-Forwarded-For names the client (FFOP_TRUSTED_PROXIES). */
  trustedProxies?: string[];
  uploadTtlSeconds: number;
  /** FFOP_WEBHOOK_ALLOW_ADDRESSES: exceptions to the SSRF guard of webhook URLs (none when absent). */
  webhookAllowAddresses?: string[];
  /** FFOP_WEBHOOK_RETENTION_SECONDS, in ms; the worker's default when absent. */
  webhookRetentionMs?: number;
  /** FFOP_LOG_RETENTION_DAYS, in ms. */
  logRetentionMs?: number;
  /** What runner results may report: the limits the operator gives runners (shared settings); defaults when absent. */
  reportLimits?: Partial<ReportLimits>;
  /** Serves /metrics on a port of its own (FFOP_METRICS_*), apart from the public API port; none when absent. */
  metricsServer?: Pick<MetricsServerOptions, 'host' | 'port' | 'token'>;
  /** FFOP_QUEUEING_MODE: with kueue, Kueue decides the order and commands show no queue_position. */
  queueingMode?: 'builtin' | 'kueue';
  /** FFOP_MAX_EVENT_STREAMS_PER_KEY, FFOP_MAX_EVENT_STREAMS. */
  eventStreams?: EventStreamLimits;
}

export async function startClusterApi(
  o: ClusterApiOptions,
): Promise<{ url: string; metricsUrl: string | null; accounts: AccountsRepo; commands: CommandsRepo; close(): Promise<void> }> {
  const repos = createServiceRepos(o.database);
  const { commands } = repos;
  // Connections to the API server are kept and reused (keep-alive-kubeconfig.ts).
  const customObjects = KeepAliveKubeConfig.of(o.kubeconfig).makeApiClient(CustomObjectsApi);
  const dispatch = (commandId: string) => {
    // The answer does not wait: a resource that fails to appear here is created by the operator's resync.
    void createCommandResource(customObjects, o.namespace, commands, commandId).catch((err) =>
      o.logger.warn({ command_id: commandId, err: (err as Error).message }, 'could not create the FfmpegCommand; the operator will'),
    );
  };
  // HTTP latency, webhook deliveries and the process; the state gauges are the operator's.
  const metrics = createMetrics();
  const http = await buildHttpApp({
    database: o.database,
    repos,
    storage: o.storage,
    logger: o.logger,
    metrics,
    trustedProxies: o.trustedProxies,
    dispatch,
    kickFileTasks: () => {}, // the operator's file tasks poll
    uploadTtlSeconds: o.uploadTtlSeconds,
    storageRoutes: o.storageRoutes,
    jobEventRoutes: jobEventRoutes({
      events: new JobEventsRepo(o.database.db),
      commands,
      tokenSecret: o.tokenSecret,
      limits: { ...DEFAULT_REPORT_LIMITS, ...o.reportLimits },
      storage: o.storage,
    }),
    webhookAllowAddresses: o.webhookAllowAddresses ?? [],
    webhookRetentionMs: o.webhookRetentionMs,
    logRetentionMs: o.logRetentionMs,
    queuePositions: o.queueingMode !== 'kueue',
    eventStreams: o.eventStreams,
  });
  const server: ServerType = await listen(http.app.fetch, o.host, o.port);
  const port = (server.address() as AddressInfo).port;
  const metricsServer = o.metricsServer
    ? await startMetricsServer({ ...o.metricsServer, registry: metrics.registry, logger: o.logger })
    : null;
  return {
    url: `http://${o.host}:${port}`,
    metricsUrl: metricsServer?.url ?? null,
    accounts: repos.accounts,
    commands,
    close: async () => {
      http.closeEventStreams(); // else the server's close waits for them
      await new Promise<void>((res) => server.close(() => res()));
      await metricsServer?.close();
      await http.close();
    },
  };
}
