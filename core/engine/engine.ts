// Both modes' engine, built in one place from the configuration: the reconciler and the file tasks
// over one job backend. Embedded mode gives it local processes, cluster mode Kubernetes Jobs.
import type { OutputMultipartSettings } from '../jobs/output-parts.ts';
import { CommandLogsRepo } from '../commands/command-logs-repo.ts';
import type { Logger } from 'pino';
import { AccountsRepo } from '../accounts/accounts-repo.ts';
import { CommandsRepo } from '../commands/commands-repo.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { FilesRepo } from '../files/files-repo.ts';
import type { FileProber } from '../media/file-prober.ts';
import type { Storage } from '../storage/storage.ts';
import { FileTasks } from './file-tasks.ts';
import type { JobBackend } from './job-backend.ts';
import { Reconciler, type ReconcilerOptions } from './reconciler.ts';
import type { EngineMetrics } from '../metrics/metrics.ts';
import { removeLeftoverTempDirs } from './leftover-temp-dirs.ts';

/** The settings the engine reads (a Config has them all; tests pass just these). */
export type EngineSettings = Pick<
  Config,
  'workDir' | 'downloadMaxBytes' | 'downloadTimeoutSeconds' | 'uploadAllowanceSeconds' | 'allowAddresses' | 'abandonedUploadSeconds'
> &
  Partial<Pick<Config, 'maxOutputFileBytes' | 'maxOutputFiles' | 'idleUploadSeconds'>>;

export interface EngineOptions {
  settings: EngineSettings;
  database: Database;
  storage: Storage;
  backend: JobBackend;
  logger: Logger;
  /** Confined ffprobe for stored and uploaded files. */
  prober: FileProber;
  /** Cores one runner may use (ffmpeg's threads are capped at it). */
  maxThreads: number;
  /** Cluster mode: the disk a step may use (FFOP_RUNNER_DISK_LIMIT), which bounds what its result may report. */
  stepDiskBytes?: number;
  /** Cluster mode: large outputs go up in parts (core/jobs/output-parts.ts). */
  outputMultipart?: OutputMultipartSettings;
  /** Cluster mode's hooks: the FfmpegCommand resources follow the commands. */
  hooks?: Pick<ReconcilerOptions, 'onCommandChanged' | 'ensureResource' | 'onCommandEvent'>;
  /** Safety-net intervals; both loops also run whenever something changes. */
  reconcileResyncMs?: number;
  fileTasksResyncMs?: number;
  /** Prometheus metrics of commands and file tasks. */
  metrics?: EngineMetrics;
}

export interface Engine {
  reconciler: Reconciler;
  fileTasks: FileTasks;
  start(): Promise<void>;
  /** Stops both loops; the backend is the caller's to close. */
  stop(): Promise<void>;
}

export function createEngine(o: EngineOptions): Engine {
  const { settings } = o;
  const reconciler = new Reconciler({
    commands: new CommandsRepo(o.database.db),
    commandLogs: new CommandLogsRepo(o.database.db),
    backend: o.backend,
    storage: o.storage,
    logger: o.logger,
    limits: {
      downloadMaxBytes: settings.downloadMaxBytes,
      downloadTimeoutSeconds: settings.downloadTimeoutSeconds,
      uploadAllowanceSeconds: settings.uploadAllowanceSeconds,
      allow: settings.allowAddresses,
      maxThreads: o.maxThreads,
      maxOutputFileBytes: settings.maxOutputFileBytes,
      maxOutputFiles: settings.maxOutputFiles,
      stepDiskBytes: o.stepDiskBytes,
      outputMultipart: o.outputMultipart,
    },
    workDir: settings.workDir,
    resyncMs: o.reconcileResyncMs,
    ...o.hooks,
    metrics: o.metrics,
    health: o.database.health,
  });
  const fileTasks = new FileTasks({
    files: new FilesRepo(o.database.db),
    accounts: new AccountsRepo(o.database.db),
    storage: o.storage,
    logger: o.logger,
    workDir: settings.workDir,
    prober: o.prober,
    download: { maxBytes: settings.downloadMaxBytes, timeoutSeconds: settings.downloadTimeoutSeconds, allow: settings.allowAddresses },
    abandonedUploadSeconds: settings.abandonedUploadSeconds,
    idleUploadSeconds: settings.idleUploadSeconds,
    resyncMs: o.fileTasksResyncMs,
    metrics: o.metrics,
    health: o.database.health,
  });
  return {
    reconciler,
    fileTasks,
    start: async () => {
      // Before any file task makes new ones.
      const leftovers = await removeLeftoverTempDirs(settings.workDir);
      if (leftovers.length > 0) o.logger.info({ folders: leftovers }, 'removed temporary folders left by an earlier run');
      await fileTasks.start();
      reconciler.start();
    },
    stop: async () => {
      await reconciler.stop();
      await fileTasks.stop();
    },
  };
}
