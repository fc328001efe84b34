// File rows -> the spec's stored file record.
import type { FileRow } from '../../core/files/files-repo.ts';
import type { MediaInfo } from '../../core/media/media-info.ts';
import { FileStatus } from '../../core/files/file-status.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { toMb } from './units.ts';

export async function storageUrlOf(f: FileRow, storage: Storage, presignTtl: number | undefined): Promise<string> {
  // Only stored, private, live files get a presigned URL; everything else keeps its plain URL.
  if (presignTtl !== undefined && f.isPrivate && !f.isDeleted && f.status === FileStatus.STORED) {
    return storage.presignGet(f.storageKey, Math.ceil(presignTtl)); // storage signs whole seconds
  }
  return storage.publicUrl(f.storageKey);
}

/** The media fields of the output file entry and the stored file record (null until probed). */
export function mediaFields(m: MediaInfo | null) {
  return {
    file_type: m?.file_type ?? null,
    file_format: m?.file_format ?? null,
    codec: m?.codec ?? null,
    mime_type: m?.mime_type ?? null,
    duration: m?.duration ?? null,
    width: m?.width ?? null,
    height: m?.height ?? null,
    frame_rate: m?.frame_rate ?? null,
    is_varying_frame_rate: m?.is_varying_frame_rate ?? null,
    timebase: m?.timebase ?? null,
    pixel_format: m?.pixel_format ?? null,
    bitrate_video_kb: m?.bitrate_video_kb ?? null,
    bitrate_audio_kb: m?.bitrate_audio_kb ?? null,
  };
}

export async function storedFileRecord(f: FileRow, storage: Storage, presignTtl?: number) {
  const m = f.media;
  return {
    file_id: f.id,
    environment_name: f.environmentName,
    storage_url: await storageUrlOf(f, storage, presignTtl),
    status: f.status,
    service_store_type: f.serviceStoreType,
    error_status: f.errorStatus,
    external_error_message: f.errorMessage,
    is_deleted: f.isDeleted,
    size_mbytes: f.sizeBytes === null ? null : toMb(f.sizeBytes),
    file_count: f.fileCount ?? (f.sizeBytes === null ? null : 1),
    size_compressed_mbytes: f.sizeCompressedBytes === null ? null : toMb(f.sizeCompressedBytes),
    is_private: f.isPrivate,
    original_file_url: f.originalFileUrl,
    ...mediaFields(m),
    video_profile_level: m?.video_profile_level ?? null,
    created_at: f.createdAt.toISOString(),
  };
}
