// Background work on stored files, level-triggered from the database like the reconciler:
// - store-file: QUEUED -> DOWNLOADING -> DOWNLOADED -> (probe, store) -> STORED, or FAILED;
// - direct uploads: UPLOADED -> (probe) -> STORED;
// - uploads neither completed nor aborted within the allowed time: aborted, FAILED (UPLOAD_EXPIRED).
// A restart resumes: files caught mid-download start their download again.
// Fair shares: one account holds at most PER_ACCOUNT of the MAX_PARALLEL tasks, and a free slot goes
// to the account with the fewest tasks running (files-repo.ts pendingWork), so an account whose
// hundreds of store-file downloads trickle from a slow server cannot hold up another's.
import { SerialPasses } from '../background/serial-passes.ts';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import type { AccountsRepo } from '../accounts/accounts-repo.ts';
import { fileOverStorageQuota } from '../accounts/plan-rules.ts';
import { FileStatus } from '../files/file-status.ts';
import { ErrorStatus } from '../commands/error-status.ts';
import type { FileRow, FilesRepo } from '../files/files-repo.ts';
import { contentTypeForFileName } from '../media/mime.ts';
import type { FileProber } from '../media/file-prober.ts';
import { createAddressPolicy } from '../net/address-policy.ts';
import { DownloadError } from '../net/download.ts';
import { downloadWithRetries } from '../net/download-retries.ts';
import type { Storage } from '../storage/storage.ts';
import { isOutOfSpace, outOfSpaceMessage } from '../storage/out-of-space.ts';
import type { EngineMetrics } from '../metrics/metrics.ts';
import type { DatabaseHealth } from '../db/database-health.ts';

const MAX_PARALLEL = 4;
const PER_ACCOUNT = 2;

export interface FileTasksOptions {
  files: FilesRepo;
  accounts: AccountsRepo;
  storage: Storage;
  logger: Logger;
  workDir: string;
  /** Confined ffprobe; each file is probed alone in a temporary folder. */
  prober: FileProber;
  download: { maxBytes: number; timeoutSeconds: number; allow: string[] };
  /** Uploads older than this are cleaned up (seconds; the spec's default is 7 days). */
  abandonedUploadSeconds: number;
  /** Uploads that received no part for this long are cleaned up sooner (seconds; FFOP_IDLE_UPLOAD_SECONDS). */
  idleUploadSeconds?: number;
  clock?: () => Date;
  resyncMs?: number;
  /** Prometheus metrics: each task's end. */
  metrics?: Pick<EngineMetrics, 'fileTaskEnded'>;
  /** While the database cannot be reached, passes wait for it; work it cut short starts over after. */
  health?: Pick<DatabaseHealth, 'up' | 'failed' | 'whenUp'>;
}

export class FileTasks {
  private readonly options: FileTasksOptions;
  private readonly clock: () => Date;
  private readonly passes: SerialPasses;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** A task ended because the database could not be reached: its file waits in DOWNLOADING or DOWNLOADED. */
  private cutShortByOutage = false;
  private readonly abort = new AbortController();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Tasks running per account. */
  private readonly perAccount = new Map<string, number>();

  constructor(o: FileTasksOptions) {
    this.options = o;
    this.clock = o.clock ?? (() => new Date());
    this.passes = new SerialPasses(() => this.pass(), o.logger, 'file tasks', { health: o.health });
  }

  async start(): Promise<void> {
    // Work cut short by a restart starts over.
    await this.requeueCutShort();
    this.kick();
    this.timer = setInterval(() => this.kick(), this.options.resyncMs ?? 60_000);
    this.timer.unref();
  }

  kick(): void {
    this.passes.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    if (this.timer) clearInterval(this.timer);
    await this.passes.stop();
    await Promise.all(this.inFlight.values());
  }

  /** One pass; exposed so tests (with an injected clock) can run the cleanup deterministically. */
  async pass(): Promise<void> {
    if (this.cutShortByOutage) {
      this.cutShortByOutage = false;
      await this.requeueCutShort();
    }
    await this.cleanAbandonedUploads();
    // A few files at a time, each on its own: one slow download does not hold up the others.
    if (this.inFlight.size >= MAX_PARALLEL) return;
    for (const f of await this.options.files.pendingWork(100, this.perAccount, PER_ACCOUNT)) {
      if (this.stopped || this.inFlight.size >= MAX_PARALLEL) return;
      if (this.inFlight.has(f.id) || (this.perAccount.get(f.accountId) ?? 0) >= PER_ACCOUNT) continue;
      this.perAccount.set(f.accountId, (this.perAccount.get(f.accountId) ?? 0) + 1);
      const task = (f.status === FileStatus.UPLOADED ? this.probeUploaded(f) : this.storeFromUrl(f))
        .catch(async (err) => {
          if (this.stopped) return; // shutting down: the next start picks the file up again
          // The database went away under it: not the file's failure; the first pass after the outage starts it over.
          if (this.options.health?.failed(err)) return void (this.cutShortByOutage = true);
          if (isOutOfSpace(err)) {
            const message = outOfSpaceMessage(f.status === FileStatus.UPLOADED ? 'probing the uploaded file' : 'storing the file');
            return this.fail(f, ErrorStatus.OUT_OF_SPACE, message).catch(() => {});
          }
          this.options.logger.error({ err, file_id: f.id }, 'file task failed');
          await this.fail(f, ErrorStatus.INTERNAL_ERROR, `the file could not be stored: ${(err as Error).message}`).catch(() => {});
        })
        .finally(() => {
          this.inFlight.delete(f.id);
          const left = (this.perAccount.get(f.accountId) ?? 1) - 1;
          if (left > 0) this.perAccount.set(f.accountId, left);
          else this.perAccount.delete(f.accountId);
          this.kick();
        });
      this.inFlight.set(f.id, task);
    }
  }

  /** Files left downloading or downloaded by work that ended without an outcome go back to the queue. */
  private async requeueCutShort(): Promise<void> {
    for (const f of await this.options.files.withStatus([FileStatus.DOWNLOADING, FileStatus.DOWNLOADED], 10_000)) {
      if (!this.inFlight.has(f.id)) await this.options.files.update(f.id, { status: FileStatus.QUEUED });
    }
  }

  private async cleanAbandonedUploads(): Promise<void> {
    const now = this.clock().getTime();
    const cutoff = new Date(now - this.options.abandonedUploadSeconds * 1000);
    for (const f of await this.options.files.staleUploads(cutoff, FileStatus.QUEUED)) {
      await this.expireUpload(f, `the upload was neither completed nor aborted within ${duration(this.options.abandonedUploadSeconds)}`);
    }
    // Idle uploads give their parts' disk space back sooner: no part for idleUploadSeconds.
    const idle = this.options.idleUploadSeconds;
    if (idle === undefined || idle >= this.options.abandonedUploadSeconds) return;
    const idleCutoff = now - idle * 1000;
    for (const f of await this.options.files.staleUploads(new Date(idleCutoff), FileStatus.QUEUED)) {
      const last = await this.options.storage.lastUploadActivity(f.storageKey, f.uploadId!);
      if (last !== null && last.getTime() >= idleCutoff) continue;
      await this.expireUpload(f, `the upload received no part for ${duration(idle)}`);
    }
  }

  private async expireUpload(f: FileRow, why: string): Promise<void> {
    const moved = await this.options.files.transition(f.id, FileStatus.QUEUED, {
      status: FileStatus.FAILED,
      errorStatus: ErrorStatus.UPLOAD_EXPIRED,
      errorMessage: `${why}; its parts were discarded`,
    });
    if (moved) {
      await this.options.storage.abortMultipartUpload(f.storageKey, f.uploadId!);
      this.options.logger.info({ file_id: f.id }, 'abandoned upload cleaned up');
      this.options.metrics?.fileTaskEnded('expire_upload', 'failed');
    }
  }

  private async storeFromUrl(f: FileRow): Promise<void> {
    if (!(await this.options.files.transition(f.id, FileStatus.QUEUED, { status: FileStatus.DOWNLOADING }))) return;
    const log = this.options.logger.child({ file_id: f.id });
    await this.withTempDir(async (dir) => {
      const path = join(dir, f.fileName);
      try {
        await downloadWithRetries(f.originalFileUrl!, path, {
          maxBytes: this.options.download.maxBytes,
          timeoutMs: this.options.download.timeoutSeconds * 1000,
          policy: createAddressPolicy(this.options.download.allow),
          signal: this.abort.signal,
        });
      } catch (err) {
        if (err instanceof DownloadError) return this.fail(f, err.errorStatus, err.message);
        if (this.stopped) return; // shutting down: the next start downloads again
        throw err;
      }
      const { size } = await stat(path);
      await this.options.files.update(f.id, { status: FileStatus.DOWNLOADED });
      const account = await this.options.accounts.getAccount(f.accountId);
      const used = await this.options.files.storageUsedBytes(f.accountId);
      const overQuota = account && fileOverStorageQuota(account.plan, used, size);
      if (overQuota) return this.fail(f, ErrorStatus.STORAGE_QUOTA_EXCEEDED, overQuota);
      const media = await this.options.prober.describe(path, f.fileName);
      await this.options.storage.putFile(f.storageKey, path, media.mime_type ?? contentTypeForFileName(f.fileName));
      if (!(await this.options.files.transition(f.id, FileStatus.DOWNLOADED, { status: FileStatus.STORED, sizeBytes: size, media }))) {
        // Deleted while it downloaded: its bytes must not outlive the record.
        await this.options.storage.delete(f.storageKey);
        this.options.metrics?.fileTaskEnded('store_file', 'discarded');
        return;
      }
      log.info({ size }, 'file stored');
      this.options.metrics?.fileTaskEnded('store_file', 'stored');
    });
  }

  private async probeUploaded(f: FileRow): Promise<void> {
    await this.withTempDir(async (dir) => {
      // Probe a local copy: ffprobe only ever reads local files.
      const path = join(dir, f.fileName);
      await pipeline(await this.options.storage.read(f.storageKey), createWriteStream(path));
      const media = await this.options.prober.describe(path, f.fileName);
      if (!(await this.options.files.transition(f.id, FileStatus.UPLOADED, { status: FileStatus.STORED, media }))) {
        await this.options.storage.delete(f.storageKey);
        this.options.metrics?.fileTaskEnded('probe_upload', 'discarded');
        return;
      }
      this.options.metrics?.fileTaskEnded('probe_upload', 'stored');
    });
  }

  private async fail(f: FileRow, errorStatus: ErrorStatus, message: string): Promise<void> {
    await this.options.files.update(f.id, { status: FileStatus.FAILED, errorStatus, errorMessage: message });
    this.options.logger.warn({ file_id: f.id, error_status: errorStatus, error_message: message }, 'file failed');
    this.options.metrics?.fileTaskEnded(f.status === FileStatus.UPLOADED ? 'probe_upload' : 'store_file', 'failed');
  }

  private async withTempDir(work: (dir: string) => Promise<void>): Promise<void> {
    await mkdir(this.options.workDir, { recursive: true });
    const dir = await mkdtemp(join(this.options.workDir, 'file-'));
    try {
      await work(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

/** "7 days", "1 day", "6 hours", "90 seconds": a duration as the messages give it. */
function duration(seconds: number): string {
  const [amount, unit] =
    seconds % 86400 === 0 ? [seconds / 86400, 'day'] : seconds % 3600 === 0 ? [seconds / 3600, 'hour'] : [seconds, 'second'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}
