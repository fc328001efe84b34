// `npm run operator`: the cluster-mode operator (PostgreSQL via FFOP_DATABASE_URL, S3 storage).
import { loadClusterConfig } from '../core/cluster-config.ts';
import { loadConfig } from '../core/config.ts';
import { openDatabase } from '../core/db/database.ts';
import { loadKubeConfig } from '../core/k8s/kubeconfig.ts';
import { createLogger } from '../core/logger.ts';
import { createStorage } from '../core/storage/create-storage.ts';
import { startOperator } from './operator.ts';
import { confinementFromConfig } from '../core/confine/from-config.ts';
import { createMetrics } from '../core/metrics/metrics.ts';
import { metricsServerSettings, OPERATOR_METRICS_PORT, startMetricsServer } from '../core/metrics/metrics-server.ts';

const config = loadConfig();
const cluster = loadClusterConfig();
const logger = createLogger(config.logLevel);
if (!config.databaseUrl.startsWith('postgres')) throw new Error('cluster mode needs PostgreSQL: set FFOP_DATABASE_URL=postgres://...');
// Stored and uploaded files are probed here, confined like every ffprobe run.
const { prober } = await confinementFromConfig(config, logger);
const database = await openDatabase(config.databaseUrl, { logger });
// Every replica serves /metrics and /healthz; the leader's also carry the engine's series.
const metrics = createMetrics();
const metricsSettings = metricsServerSettings(config, OPERATOR_METRICS_PORT);
const metricsServer = metricsSettings ? await startMetricsServer({ ...metricsSettings, registry: metrics.registry, logger }) : null;
const operator = startOperator({
  kubeconfig: loadKubeConfig(),
  namespace: cluster.namespace,
  watchNamespaces: cluster.watchNamespaces,
  database,
  storage: await createStorage({
    kind: config.storage,
    publicUrl: config.publicUrl,
    signingKey: config.signingKey ?? '',
    localDir: config.storageDir,
    s3: config.s3 ?? undefined,
  }),
  logger,
  identity: cluster.identity,
  runnerImage: cluster.runnerImage,
  reportUrl: cluster.reportUrl,
  tokenSecret: cluster.jobTokenSecret,
  settings: config,
  maxOutputFileBytes: config.maxOutputFileBytes,
  maxOutputFiles: config.maxOutputFiles,
  maxMemoryBytes: config.maxMemoryBytes,
  podMemoryLimit: cluster.runnerMemoryLimit,
  runnerConfinement: cluster.runnerConfinement,
  runnerPlacement: {
    nodeSelector: cluster.runnerNodeSelector,
    tolerations: cluster.runnerTolerations,
    priorityClassName: cluster.runnerPriorityClass,
    hostNetwork: cluster.runnerHostNetwork,
  },
  prober,
  metrics,
  queueing: cluster.queueing,
  runnerDiskRequest: cluster.runnerDiskRequest,
  runnerDiskLimit: cluster.runnerDiskLimit,
});
const shutdown = async (code: number) => {
  await operator.stop();
  await metricsServer?.close();
  await database.close();
  process.exit(code);
};
// Crash-only: a replica that lost the lease exits, and comes back as a follower.
void operator.lost.then(() => shutdown(1));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(0));
