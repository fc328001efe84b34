// Command rows -> the spec's JSON records.
import type { CommandListRow, CommandRow, FileRow } from '../../core/commands/commands-repo.ts';
import { mediaFields, storageUrlOf } from '../files/serialize.ts';
import { toMb } from '../files/units.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { progressView } from '../../core/commands/progress.ts';
import { timingsView } from '../../core/commands/timings.ts';
import { NOT_QUEUED, type QueueView } from '../../core/commands/queue-snapshot.ts';

const round = (x: number, digits = 6) => Number(x.toFixed(digits));

function seconds(from: Date, to: Date): number {
  return round((to.getTime() - from.getTime()) / 1000, 3);
}

export async function outputFileEntry(f: FileRow, storage: Storage, presignTtl?: number) {
  const m = f.media;
  return {
    file_id: f.id,
    storage_url: await storageUrlOf(f, storage, presignTtl),
    ...mediaFields(m),
    size_mbytes: f.sizeBytes === null ? null : toMb(f.sizeBytes),
    // Playlists and OUTPUT_FOLDER hold several files; their zip's size is size_compressed_mbytes.
    file_count: f.fileCount ?? 1,
    size_compressed_mbytes: f.sizeCompressedBytes === null ? null : toMb(f.sizeCompressedBytes),
    is_deleted: f.isDeleted,
    is_private: f.isPrivate,
    status: f.status, // STORED: outputs appear once stored (as Rendi's documentation shows them)
  };
}

/** `queue`: where a QUEUED command stands (queue-snapshot.ts); nulls when not given. */
export async function commandRecord(
  c: CommandRow,
  files: FileRow[],
  storage: Storage,
  now: Date,
  presignTtl?: number,
  queue: QueueView = NOT_QUEUED,
) {
  const outputFiles: Record<string, unknown> = {};
  // In the order the client declared them.
  for (const declared of c.outputs) {
    const f = files.find((x) => x.id === declared.fileId);
    if (f) outputFiles[declared.alias] = await outputFileEntry(f, storage, presignTtl);
  }
  return {
    command_id: c.id,
    command_type: c.commandType,
    environment_name: c.environmentName,
    status: c.status,
    processing_stage: c.processingStage,
    queue_reason: queueReason(c),
    progress: progressRecord(c),
    queue_position: queue.queuePosition,
    estimated_start_seconds: queue.estimatedStartSeconds,
    timings: timingsView(c),
    error_status: c.errorStatus,
    error_message: c.errorMessage,
    retry_of: c.retryOf,
    retried_by: c.retriedBy,
    original_request: c.originalRequest,
    total_processing_seconds: seconds(c.createdAt, c.finishedAt ?? now),
    ffmpeg_command_run_seconds: round(c.ffmpegSeconds, 3),
    vcpu_count: c.vcpuCount,
    output_files: outputFiles,
    processing_quota_used: toMb(c.processedBytes),
    metadata: c.metadata,
    created_at: c.createdAt.toISOString(),
  };
}

/** Why a QUEUED command that had started waits again (cluster mode); null otherwise. */
function queueReason(c: Pick<CommandRow, 'status' | 'queueReason'>): string | null {
  return c.status === 'QUEUED' ? c.queueReason : null;
}

/** How far ffmpeg is in the current step: only while PROCESSING and once it has reported. */
function progressRecord(c: Pick<CommandRow, 'status' | 'progress'>) {
  const p = progressView(c);
  return p && { percent: p.percent, out_time_seconds: p.outTimeSeconds, speed: p.speed };
}

export function commandListItem(c: CommandListRow, now: Date) {
  return {
    command_id: c.id,
    status: c.status,
    environment_name: c.environmentName,
    created_at: c.createdAt.toISOString(),
    storage_quota_used: toMb(c.storedBytes),
    processing_quota_used: toMb(c.processedBytes),
    output_file_count: c.outputFileCount,
    ffmpeg_command_run_seconds: round(c.ffmpegSeconds, 3),
    processing_seconds: seconds(c.createdAt, c.finishedAt ?? now),
    processing_stage: c.processingStage,
    queue_reason: queueReason(c),
    progress: progressRecord(c),
    timings: timingsView(c),
    error_status: c.errorStatus,
    error_message: c.errorMessage,
    retry_of: c.retryOf,
    retried_by: c.retriedBy,
  };
}
