// `npm run api:cluster`: the HTTP API in cluster mode (PostgreSQL, S3, FfmpegCommand resources).
import { loadClusterConfig } from '../../core/cluster-config.ts';
import { loadConfig, uploadUrlTtlSeconds } from '../../core/config.ts';
import { openDatabase } from '../../core/db/database.ts';
import { loadKubeConfig } from '../../core/k8s/kubeconfig.ts';
import { createLogger } from '../../core/logger.ts';
import { createStorage } from '../../core/storage/create-storage.ts';
import { publicFilesProxy } from '../routes/public-files-proxy.ts';
import { startClusterApi } from './start-cluster-api.ts';
import { eventStreamLimits } from '../events/watch-event-streams.ts';
import { CLUSTER_API_METRICS_PORT, metricsServerSettings } from '../../core/metrics/metrics-server.ts';

const config = loadConfig();
const cluster = loadClusterConfig();
const logger = createLogger(config.logLevel);
if (!config.databaseUrl.startsWith('postgres')) throw new Error('cluster mode needs PostgreSQL: set FFOP_DATABASE_URL=postgres://...');
if (config.storage !== 's3') throw new Error('cluster mode needs shared storage: set FFOP_STORAGE=s3 and the FFOP_S3_* settings');
const database = await openDatabase(config.databaseUrl, { logger });
const storage = await createStorage({ kind: 's3', publicUrl: config.publicUrl, signingKey: '', localDir: '', s3: config.s3 ?? undefined });
const api = await startClusterApi({
  kubeconfig: loadKubeConfig(),
  namespace: cluster.namespace,
  database,
  storage,
  storageRoutes: publicFilesProxy(storage),
  logger,
  tokenSecret: cluster.jobTokenSecret,
  host: config.host,
  trustedProxies: config.trustedProxies,
  port: config.port,
  uploadTtlSeconds: uploadUrlTtlSeconds(config),
  reportLimits: config,
  webhookAllowAddresses: config.webhookAllowAddresses,
  webhookRetentionMs: config.webhookRetentionSeconds * 1000,
  logRetentionMs: config.logRetentionDays * 86_400_000,
  eventStreams: eventStreamLimits(config),
  metricsServer: metricsServerSettings(config, CLUSTER_API_METRICS_PORT) ?? undefined,
  queueingMode: cluster.queueing.mode,
});
logger.info({ url: api.url }, 'ffmpeg-operator API started (cluster mode)');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(
    signal,
    () =>
      void api
        .close()
        .then(() => database.close())
        .then(() => process.exit(0)),
  );
}
