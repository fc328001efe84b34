// Embedded mode: API, reconciler, local-process job backend, PGlite (or PostgreSQL) and the local
// storage folder, in one process.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { ServerType } from '@hono/node-server';
import { listen } from './listen.ts';
import type { Logger } from 'pino';
import { AccountsRepo } from '../core/accounts/accounts-repo.ts';
import { CommandsRepo } from '../core/commands/commands-repo.ts';
import { watchedPollCache } from '../core/commands/poll-cache.ts';
import { watchKeyChanges } from '../core/accounts/key-cache.ts';
import { FilesRepo } from '../core/files/files-repo.ts';
import type { FileTasks } from '../core/engine/file-tasks.ts';
import { uploadUrlTtlSeconds, type Config } from '../core/config.ts';
import { openDatabase, type Database } from '../core/db/database.ts';
import { LocalStorage } from '../core/storage/local-storage.ts';
import type { Storage } from '../core/storage/storage.ts';
import { LocalProcessBackend } from '../core/engine/local-process-backend.ts';
import type { Reconciler } from '../core/engine/reconciler.ts';
import { createEngine } from '../core/engine/engine.ts';
import { storageFilesRoutes } from './routes/storage-files.ts';
import { publicFilesProxy } from './routes/public-files-proxy.ts';
import { createStorage } from '../core/storage/create-storage.ts';
import { createApp } from './app.ts';
import { adminSocketPath, startAdminSocket } from './admin-socket.ts';
import { runCli } from './cli.ts';
import { secureDataPermissions } from '../core/data-permissions.ts';
import { confinementFromConfig } from '../core/confine/from-config.ts';
import { runnerSettingsFor } from '../core/confine/set-up.ts';
import { createMetrics } from '../core/metrics/metrics.ts';
import { registerStateGauges } from '../core/metrics/state-gauges.ts';
import { createAddressPolicy } from '../core/net/address-policy.ts';
import { WebhooksRepo } from '../core/webhooks/webhooks-repo.ts';
import { startWebhookWorker, type WebhookWorker } from './webhooks/webhook-worker.ts';

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
  const publicUrl = config.port === 0 ? config.publicUrl.replace(/:\d+$/, `:${port}`) : config.publicUrl;
  try {
    // After the database is open (PGlite creates its files 0666): folders 0700, files 0600, every start.
    await secureDataPermissions(config);
    const accounts = new AccountsRepo(database.db);
    const commands = new CommandsRepo(database.db);
    const files = new FilesRepo(database.db);
    const initialKey = await ensureDefaultAccount(accounts, config, logger);
    const polls = await watchedPollCache(database, commands);
    const stopKeyWatch = await watchKeyChanges(database);
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
    const engine = createEngine({
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
    const { reconciler, fileTasks } = engine;
    const app = createApp({
      accounts,
      commands,
      readCommand: polls.find,
      insertCommand: polls.insert,
      listCommands: polls.list,
      files,
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
      trustedProxies: config.trustedProxies,
      metrics,
      // Behind a token always: FFOP_METRICS_TOKEN, else one generated into the data folder once.
      metricsEndpoint: { token: config.metricsToken ?? (await persistentSecret(join(config.dataDir, METRICS_TOKEN_FILE))) },
      webhooks: { webhooks: new WebhooksRepo(database.db), addressPolicy: createAddressPolicy(config.webhookAllowAddresses) },
      health: database.health,
    });
    handler = (req, env) => app.fetch(req, env);
    const url = publicUrl;
    await engine.start();
    const webhookWorker = await startWebhookWorker({
      database,
      commands,
      files,
      storage,
      logger,
      allowAddresses: config.webhookAllowAddresses,
      retentionMs: config.webhookRetentionSeconds * 1000,
      onAttempt: (outcome) => metrics.webhookAttempt(outcome),
    });
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
        await new Promise<void>((res) => server.close(() => res()));
        await engine.stop();
        await webhookWorker.stop();
        await backend.close();
        await polls.stop();
        await stopKeyWatch();
        await database.close();
      },
    };
  } catch (err) {
    server.close();
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
