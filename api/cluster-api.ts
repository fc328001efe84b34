// Cluster mode's API: the same HTTP app, with PostgreSQL, S3 (or a shared local folder in tests),
// and a dispatch that turns each stored command into an FfmpegCommand resource. It runs nothing
// itself: the operator does. Polls and lists are served from the database, never from Kubernetes.
import type { AddressInfo } from 'node:net';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { AccountsRepo } from '../core/accounts/accounts-repo.ts';
import { CommandsRepo } from '../core/commands/commands-repo.ts';
import { watchedPollCache } from '../core/commands/poll-cache.ts';
import { watchKeyChanges } from '../core/accounts/key-cache.ts';
import type { Database } from '../core/db/database.ts';
import { FilesRepo } from '../core/files/files-repo.ts';
import { JobEventsRepo } from '../core/jobs/job-events-repo.ts';
import type { Storage } from '../core/storage/storage.ts';
import { createFfmpegCommand } from '../core/k8s/ffmpeg-command.ts';
import { createApp } from './app.ts';
import { listen } from './listen.ts';
import { jobEventRoutes } from './routes/job-events.ts';

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
}

export async function startClusterApi(
  o: ClusterApiOptions,
): Promise<{ url: string; accounts: AccountsRepo; commands: CommandsRepo; close(): Promise<void> }> {
  const accounts = new AccountsRepo(o.database.db);
  const commands = new CommandsRepo(o.database.db);
  const customObjects = o.kubeconfig.makeApiClient(CustomObjectsApi);
  const dispatch = (commandId: string) => {
    // The answer does not wait: a resource that fails to appear here is created by the operator's resync.
    void (async () => {
      const row = await commands.findById(commandId);
      if (!row) return;
      await createFfmpegCommand(customObjects, o.namespace, row);
      await commands.update(commandId, { resourceCreatedAt: new Date() });
    })().catch((err) =>
      o.logger.warn({ command_id: commandId, err: (err as Error).message }, 'could not create the FfmpegCommand; the operator will'),
    );
  };
  // The operator writes command states in its own process: the database's notifications reach here.
  const polls = await watchedPollCache(o.database, commands);
  const stopKeyWatch = await watchKeyChanges(o.database);
  const app = createApp({
    trustedProxies: o.trustedProxies,
    accounts,
    commands,
    readCommand: polls.find,
    files: new FilesRepo(o.database.db),
    storage: o.storage,
    logger: o.logger,
    dispatch,
    kickFileTasks: () => {}, // the operator's file tasks poll
    uploadTtlSeconds: o.uploadTtlSeconds,
    storageRoutes: o.storageRoutes,
    jobEventRoutes: jobEventRoutes(new JobEventsRepo(o.database.db), o.tokenSecret),
  });
  const server: ServerType = await listen(app.fetch, o.host, o.port);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${o.host}:${port}`,
    accounts,
    commands,
    close: async () => {
      await new Promise<void>((res) => server.close(() => res()));
      await polls.stop();
      await stopKeyWatch();
    },
  };
}
