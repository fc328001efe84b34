// Embedded mode: API, reconciler, local-process job backend, PGlite (or PostgreSQL) and the local
// storage folder, in one process.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { ServerType } from '@hono/node-server';
import { listen } from '../app/listen.ts';
import { eventStreamLimits } from '../events/watch-event-streams.ts';
import { buildHttpApp, createServiceRepos, type HttpApp } from '../app/build-http-app.ts';
import type { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import type { CommandsRepo } from '../../core/commands/commands-repo.ts';
import type { FilesRepo } from '../../core/files/files-repo.ts';
import type { WebhookWorker } from '../webhooks/webhook-worker.ts';
import type { Logger } from 'pino';
import type { FileTasks } from '../../core/engine/file-tasks.ts';
import { uploadUrlTtlSeconds, type Config } from '../../core/config.ts';
import { openDatabase, type Database } from '../../core/db/database.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { LocalProcessBackend } from '../../core/engine/local-process-backend.ts';
import type { Reconciler } from '../../core/engine/reconciler.ts';
import { createEngine } from '../../core/engine/engine.ts';
import { storageFilesRoutes } from '../routes/storage-files.ts';
import { jobUploadRoutes } from '../routes/job-uploads.ts';
import { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { DEFAULT_OUTPUT_MULTIPART } from '../../core/jobs/output-parts.ts';
import { publicFilesProxy } from '../routes/public-files-proxy.ts';
import { createStorage } from '../../core/storage/create-storage.ts';
import { adminSocketPath, startAdminSocket } from '../cli/admin-socket.ts';
import { runCli } from '../cli/cli.ts';
import { secureDataPermissions } from '../../core/data-permissions.ts';
import { confinementFromConfig } from '../../core/confine/from-config.ts';
import { runnerSettingsFor } from '../../core/confine/set-up.ts';
import { createMetrics } from '../../core/metrics/metrics.ts';
import { registerStateGauges } from '../../core/metrics/state-gauges.ts';

export interface EmbeddedService {
  url: string;
  database: Database;
  accounts: AccountsRepo;
  commands: CommandsRepo;
  files: FilesRepo;
  storage: Storage;
  reconciler: Reconciler;
  fileTasks: FileTasks;
  /** Sends webhook deliveries. */
  webhookWorker: WebhookWorker;
  /** Set on the very first start: the default account's key (printed once). */
  initialKey: string | null;
  close(): Promise<void>;
}

/** Tests' settings that are not configuration. */
export interface EmbeddedTuning {
  /** The reconciler's safety-net pass interval (2 s); a test sets it long to see that passes are asked for. */
  reconcileResyncMs?: number;
}

export async function startEmbedded(config: Config, logger: Logger, tuning: EmbeddedTuning = {}): Promise<EmbeddedService> {
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  // Refuse to start rather than run hostile command lines unconfined.
  const { confinement, uids, prober } = await confinementFromConfig(config, logger);
  const database = await openDatabase(config.databaseUrl, { logger });
  // Listen first: with port 0 the URLs the service hands out need the port it got.
  // `env` carries the socket: the API limits failed key attempts per client address.
  let handler: ((req: Request, env: unknown) => Response | Promise<Response>) | null = null;
  let server: ServerType;
  try {
    server = await listen(
      (req, env) => (handler ? handler(req, env) : new Response('starting', { status: 503 })),
      config.host,
      config.port,
    );
  } catch (err) {
    await database.close();
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  // The HTTP app's caches and webhook worker, stopped again if a later step of the start fails.
  let httpStarted: HttpApp | undefined;
  // Likewise the runners (the backend starts a warm one at once) and the engine.
  let backendStarted: LocalProcessBackend | undefined;
  let engineStarted: { stop(): Promise<void> } | undefined;
  const publicUrl = config.port === 0 ? config.publicUrl.replace(/:\d+$/, `:${port}`) : config.publicUrl;
  try {
    // After the database is open (PGlite creates its files 0666): folders 0700, files 0600, every start.
    await secureDataPermissions(config);
    const repos = createServiceRepos(database);
    const { accounts, commands, files } = repos;
    const initialKey = await ensureDefaultAccount(accounts, config, logger);
    const storage = await createStorage({
      kind: config.storage,
      publicUrl,
      signingKey: config.signingKey ?? (await persistentSecret(join(config.dataDir, 'signing-key'))),
      localDir: config.storageDir,
      s3: config.s3 ?? undefined,
    });
    // This process runs the reconciler, so it also exposes the state read from the database.
    const metrics = createMetrics();
    registerStateGauges(metrics.registry, database.db);
    const backend = new LocalProcessBackend({
      logger,
      workRoot: config.workDir,
      capacityVcpus: config.localMaxVcpus,
      runner: {
        maxOutputFileBytes: config.maxOutputFileBytes,
        maxMemoryBytes: config.maxMemoryBytes,
        maxOutputFiles: config.maxOutputFiles,
        // Outputs are moved into local storage rather than copied (handoff.ts).
        ...(storage instanceof LocalStorage ? { handoffDir: await storage.handoffDir() } : {}),
        ...runnerSettingsFor(confinement),
      },
      uids,
      warmRunner: true,
    });
    backendStarted = backend;
    // S3 storage: large outputs go up in parts (core/jobs/output-parts.ts); local storage takes them by hand-off.
    const outputMultipart =
      storage instanceof LocalStorage
        ? undefined
        : {
            ...DEFAULT_OUTPUT_MULTIPART,
            plans: { url: `${publicUrl}/internal/v1/job-uploads`, tokenSecret: randomBytes(32).toString('hex') },
          };
    const engine = createEngine({
      outputMultipart,
      settings: config,
      database,
      storage,
      backend,
      logger,
      prober,
      maxThreads: config.localMaxVcpus,
      metrics: metrics.engine,
      reconcileResyncMs: tuning.reconcileResyncMs,
    });
    engineStarted = engine;
    const { reconciler, fileTasks } = engine;
    const http = await buildHttpApp({
      database,
      repos,
      storage,
      logger,
      dispatch: () => reconciler.submitted(),
      cancelRequested: () => reconciler.cancelRequested(),
      kickFileTasks: () => fileTasks.kick(),
      uploadTtlSeconds: uploadUrlTtlSeconds(config),
      storageRoutes:
        storage instanceof LocalStorage
          ? storageFilesRoutes(storage, { reserveBytes: config.diskReserveBytes })
          : publicFilesProxy(storage),
      maxBodyBytes: config.maxBodyBytes,
      jobEventRoutes: outputMultipart
        ? jobUploadRoutes({
            events: new JobEventsRepo(database.db),
            commands,
            tokenSecret: outputMultipart.plans.tokenSecret,
            limits: { ...config, outputMultipart },
            storage,
            outputMultipart,
          })
        : undefined,
      trustedProxies: config.trustedProxies,
      eventStreams: eventStreamLimits(config),
      metrics,
      // Behind a token always: FFOP_METRICS_TOKEN, else one generated into the data folder once.
      metricsEndpoint: { token: config.metricsToken ?? (await persistentSecret(join(config.dataDir, METRICS_TOKEN_FILE))) },
      webhookAllowAddresses: config.webhookAllowAddresses,
      webhookRetentionMs: config.webhookRetentionSeconds * 1000,
      logRetentionMs: config.logRetentionDays * 86_400_000,
    });
    httpStarted = http;
    const { app, webhookWorker } = http;
    handler = (req, env) => app.fetch(req, env);
    const url = publicUrl;
    await engine.start();
    const admin = await startAdminSocket(adminSocketPath(config.dataDir), database, (argv, out, o) =>
      runCli(argv, out, { ...o, webhookAllowAddresses: config.webhookAllowAddresses }),
    );
    logger.info(
      { url, database: database.driver, storage: config.storage, data_dir: config.dataDir },
      'ffmpeg-operator started (embedded mode)',
    );
    return {
      url,
      database,
      accounts,
      commands,
      files,
      storage,
      reconciler,
      fileTasks,
      webhookWorker,
      initialKey,
      close: async () => {
        await admin.close();
        http.closeEventStreams(); // else the server's close waits for them
        await new Promise<void>((res) => server.close(() => res()));
        await engine.stop();
        await backend.close();
        await http.close();
        await database.close();
      },
    };
  } catch (err) {
    server.close();
    await engineStarted?.stop().catch(() => {});
    await backendStarted?.close().catch(() => {});
    await httpStarted?.close();
    await database.close();
    throw err;
  }
}

/** First start: an account on the 'pro' plan with a 'main' key, printed once and kept in the data folder. */
async function ensureDefaultAccount(accounts: AccountsRepo, config: Config, logger: Logger): Promise<string | null> {
  if ((await accounts.listAccounts()).length > 0) return null;
  const account = await accounts.createAccount(config.defaultAccount, 'pro');
  const { key } = await accounts.createKey(account.id, 'main', 'created on first start');
  await writeFile(join(config.dataDir, 'initial-api-key'), key + '\n', { mode: 0o600 });
  logger.info({ account: account.name, plan: 'pro' }, 'created the default account and API key');
  return key;
}

/** Where embedded mode keeps the /metrics token it generated when FFOP_METRICS_TOKEN is not set. */
export const METRICS_TOKEN_FILE = 'metrics-token';

export async function persistentSecret(path: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    const secret = randomBytes(32).toString('hex');
    await writeFile(path, secret, { mode: 0o600, flag: 'wx' }).catch(() => {});
    return (await readFile(path, 'utf8')).trim();
  }
}
