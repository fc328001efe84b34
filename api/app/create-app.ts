// The HTTP app factory: everything it needs is passed in, so tests build it without a socket.
import { PlanRefusal } from '../../core/accounts/plan-refusal.ts';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import type { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import type { CommandsRepo } from '../../core/commands/commands-repo.ts';
import type { FilesRepo } from '../../core/files/files-repo.ts';
import { Quotas } from '../../core/accounts/quotas.ts';
import { fileRoutes } from '../routes/files.ts';
import { RateLimit } from '../middleware/rate-limit.ts';
import { AuthFailureLimit, DEFAULT_AUTH_FAILURE_LIMIT, type AuthFailureLimitOptions } from '../middleware/auth-failure-limit.ts';
import type { Storage } from '../../core/storage/storage.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { v1Gate } from '../middleware/v1-gate.ts';
import { limitBody } from '../middleware/body-limit.ts';
import { commandRoutes, type CommandRoutesDeps } from '../routes/commands.ts';
import { docsRoutes } from '../routes/docs.ts';
import { dashboardRoutes } from '../dashboard/dashboard-routes.ts';
import { RequestInvalid } from '../schemas/validation.ts';
import { allowedMethods, answerUnroutedMethod } from '../routes/allowed-methods.ts';
import { webhookRoutes, type WebhookRoutesDeps } from '../routes/webhook.ts';
import type { Metrics } from '../../core/metrics/metrics.ts';
import { httpLatency, metricsRoute } from './metrics-route.ts';
import type { DatabaseHealth } from '../../core/db/database-health.ts';
import { isDatabaseUnavailable } from '../../core/db/unavailable.ts';
import { databaseUnavailable } from '../middleware/database-unavailable.ts';
import { IDEMPOTENT_POSTS, idempotency } from '../middleware/idempotency.ts';
import type { IdempotencyKeysRepo } from '../../core/idempotency/idempotency-keys-repo.ts';
import { commandEventRoutes } from '../routes/command-events.ts';
import { commandLogRoutes } from '../routes/command-log.ts';
import type { CommandLogsRepo } from '../../core/commands/command-logs-repo.ts';
import type { EventStreams } from '../events/event-streams.ts';

export interface AppDeps {
  accounts: AccountsRepo;
  commands: CommandsRepo;
  /** The poll path's read of a command with its outputs, scoped by account (a PollCache's `find`). */
  readCommand: CommandRoutesDeps['readCommand'];
  insertCommand: CommandRoutesDeps['insertCommand'];
  listCommands: CommandRoutesDeps['listCommands'];
  queueView?: CommandRoutesDeps['queueView'];
  files: FilesRepo;
  /** The Idempotency-Key header's claims and answers (api/middleware/idempotency.ts). */
  idempotencyKeys: IdempotencyKeysRepo;
  storage: Storage;
  dispatch: (commandId: string) => void;
  /** A command's cancel was recorded (embedded mode: ask the reconciler for a pass). */
  cancelRequested?: (commandId: string) => void;
  kickFileTasks: () => void;
  /** Validity of upload part URLs (seconds, at most 7 days). */
  uploadTtlSeconds: number;
  logger: Logger;
  clock?: () => Date;
  /** Serves stored files (local storage backend only). */
  storageRoutes?: Hono;
  /** Cluster mode: where runner pods report their events. */
  jobEventRoutes?: Hono;
  /**
   * Whether the database can be reached: /readyz answers from it at once, and /v1 answers 503 with
   * Retry-After while it cannot. Absent: always reachable (readiness then says ready).
   */
  health?: Pick<DatabaseHealth, 'up' | 'failed'>;
  maxBodyBytes?: number;
  /** Failed API key attempts allowed per client address and from all addresses in a window, then 429. */
  authFailures?: Pick<AuthFailureLimitOptions, 'maxFailures' | 'windowSeconds' | 'globalMaxFailures'>;
  /** Reverse proxies whose X-Forwarded-For names the client (FFOP_TRUSTED_PROXIES). */
  trustedProxies?: readonly string[];
  /** The webhook of the caller's environment: its repo and the address policy of FFOP_ALLOW_ADDRESSES. */
  webhooks: Omit<WebhookRoutesDeps, 'clock'>;
  /** Prometheus metrics: every request's latency is recorded by route pattern. */
  metrics?: Metrics;
  /** Embedded mode: GET /metrics on this app, outside /v1 (no API key; this bearer token). */
  metricsEndpoint?: { token: string };
  /** GET /v1/commands/{id}/events (api/events/); absent: the route is not served. */
  eventStreams?: EventStreams;
  /** ffmpeg's logs (GET /v1/commands/{id}/log) and how long they are kept after their command ended. */
  commandLogs: CommandLogsRepo;
  logRetentionMs: number;
}

export function createApp(d: AppDeps): Hono {
  const clock = d.clock ?? (() => new Date());
  // Milliseconds for the per-request limits, without a Date per request unless a test injects a clock.
  const nowMs = d.clock ? () => clock().getTime() : Date.now;
  const app = new Hono();
  if (d.metrics) app.use('*', httpLatency(d.metrics));

  app.onError((err, c) => {
    if (err instanceof RequestInvalid) return c.json({ detail: err.detail }, 422);
    if (err instanceof PlanRefusal) return c.json({ detail: err.message }, 403);
    // Not logged here: the health logs the outage once, not once a request.
    if (d.health ? d.health.failed(err) : isDatabaseUnavailable(err)) return databaseUnavailable(c);
    d.logger.error({ err, path: c.req.path, method: c.req.method }, 'request failed');
    return c.json({ detail: 'Internal Server Error' }, 500);
  });
  // A known path answers OPTIONS with 204 and Allow, another method with 405 and Allow; an unknown path 404.
  const allowOf = allowedMethods(() => app.routes);
  app.notFound((c) => answerUnroutedMethod(c, allowOf(c.req.path)) ?? c.json({ detail: 'Not Found' }, 404));

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  // No query per call: a load balancer's probes must not wait on (or add to) a database in trouble.
  app.get('/readyz', (c) => {
    const ok = d.health?.up ?? true;
    return c.json({ status: ok ? 'ready' : 'not ready' }, ok ? 200 : 503);
  });
  if (d.metrics && d.metricsEndpoint) app.route('/', metricsRoute(d.metrics, d.metricsEndpoint.token));

  const api = new Hono<AppEnv>();
  api.use(
    '/v1/*',
    v1Gate({
      limitBody: limitBody(d.maxBodyBytes ?? 1024 * 1024),
      authFailures: new AuthFailureLimit({ ...(d.authFailures ?? DEFAULT_AUTH_FAILURE_LIMIT), trustedProxies: d.trustedProxies }),
      accounts: d.accounts,
      rateLimit: new RateLimit(),
      allowOf,
      clock: nowMs,
      databaseUp: d.health ? () => d.health!.up : undefined,
    }),
  );
  // After the gate (a 401 or 429 is never stored), before the routes that create something.
  const idempotent = idempotency({ keys: d.idempotencyKeys, clock, logger: d.logger });
  for (const path of IDEMPOTENT_POSTS) api.use(path, idempotent);
  const quotas = new Quotas(d.files, clock);
  api.route(
    '/',
    commandRoutes({
      commands: d.commands,
      readCommand: d.readCommand,
      insertCommand: d.insertCommand,
      listCommands: d.listCommands,
      queueView: d.queueView,
      quotas,
      storage: d.storage,
      dispatch: d.dispatch,
      cancelRequested: d.cancelRequested,
      clock,
    }),
  );
  if (d.eventStreams) api.route('/', commandEventRoutes({ streams: d.eventStreams, readCommand: d.readCommand }));
  api.route('/', commandLogRoutes({ readCommand: d.readCommand, logs: d.commandLogs, retentionMs: d.logRetentionMs, clock }));
  api.route(
    '/',
    fileRoutes({ files: d.files, storage: d.storage, quotas, kickFileTasks: d.kickFileTasks, uploadTtlSeconds: d.uploadTtlSeconds }),
  );
  api.route('/', webhookRoutes({ ...d.webhooks, clock }));

  app.route('/', docsRoutes(api));
  app.route('/', dashboardRoutes(d.storage));
  if (d.storageRoutes) app.route('/', d.storageRoutes);
  if (d.jobEventRoutes) app.route('/', d.jobEventRoutes);
  app.route('/', api);
  return app;
}
