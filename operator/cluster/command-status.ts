// An FfmpegCommand's .status, made from its command's row and stored files: what `kubectl get`, `wait`
// and `describe` show, and what a pipeline reads its outputs from. Pure: every time comes from the row,
// so writing it again gives the same conditions (no transition time moves).
import type { CommandRow, FileRow } from '../../core/commands/commands-repo.ts';
import { CommandStatus } from '../../core/commands/command-status.ts';
import { jobName } from '../../core/engine/job-backend.ts';
import { progressView } from '../../core/commands/progress.ts';
import type { FfmpegCommandCondition, FfmpegCommandOutput, FfmpegCommandStatus, RefusalStatus } from '../../core/k8s/ffmpeg-command.ts';

const MB = 1024 * 1024;

/** Condition reasons are CamelCase-ish words: ERROR_STATUS and stage names fit (letters, digits, _). */
const reasonOf = (text: string) => text.replace(/[^A-Za-z0-9_]/g, '') || 'Unknown';

function condition(
  type: FfmpegCommandCondition['type'],
  isTrue: boolean,
  reason: string,
  message: string,
  since: Date,
  generation: number | undefined,
): FfmpegCommandCondition {
  return {
    type,
    status: isTrue ? 'True' : 'False',
    reason: reasonOf(reason),
    message: message.slice(0, 4096),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    lastTransitionTime: since.toISOString(),
  };
}

/** Accepted, Running, Succeeded and Failed, as the command stands. */
export function conditionsOf(c: CommandRow, generation?: number): FfmpegCommandCondition[] {
  const ended = c.finishedAt ?? c.createdAt;
  const steps = c.steps.length;
  const step = `step ${c.currentStep + 1} of ${steps}`;
  const running = c.status === CommandStatus.PROCESSING || c.status === CommandStatus.PREPARED_FFMPEG_COMMAND;
  const finished = c.status === CommandStatus.SUCCESS || c.status === CommandStatus.FAILED;
  return [
    condition('Accepted', true, 'Accepted', `accepted as command ${c.id} (environment ${c.environmentName})`, c.createdAt, generation),
    running
      ? condition(
          'Running',
          true,
          c.processingStage ?? 'Started',
          `${step}: ${c.processingStage ?? 'starting'}`,
          c.stepStartedAt ?? c.startedAt ?? c.createdAt,
          generation,
        )
      : finished
        ? condition('Running', false, 'Finished', `ended ${c.status}`, ended, generation)
        : condition(
            'Running',
            false,
            'Queued',
            c.queueReason ? `back in the queue: ${c.queueReason}` : 'waiting in the queue',
            c.createdAt,
            generation,
          ),
    c.status === CommandStatus.SUCCESS
      ? condition('Succeeded', true, 'Succeeded', `all ${steps} step${steps > 1 ? 's' : ''} succeeded`, ended, generation)
      : condition(
          'Succeeded',
          false,
          finished ? 'Failed' : 'NotFinished',
          finished ? 'the command failed' : 'not finished yet',
          ended,
          generation,
        ),
    c.status === CommandStatus.FAILED
      ? condition('Failed', true, c.errorStatus ?? 'Failed', c.errorMessage ?? '', ended, generation)
      : condition(
          'Failed',
          false,
          finished ? 'Succeeded' : 'NotFinished',
          finished ? 'the command succeeded' : 'not finished yet',
          ended,
          generation,
        ),
  ];
}

/** The poll record's output_files entry, camelCased; unknown fields are left out (a merge patch drops nulls). */
export function outputOf(f: FileRow, storageUrl: string): FfmpegCommandOutput {
  const m = f.media;
  const out: FfmpegCommandOutput = {
    alias: f.alias ?? '',
    fileId: f.id,
    fileName: f.fileName,
    sizeBytes: f.sizeBytes ?? 0,
    storageKey: f.storageKey,
    storageUrl,
    fileCount: f.fileCount ?? 1,
    isPrivate: f.isPrivate,
  };
  if (f.sizeBytes !== null) out.sizeMbytes = Number((f.sizeBytes / MB).toFixed(6));
  const media: Partial<FfmpegCommandOutput> = {
    fileType: m?.file_type ?? undefined,
    fileFormat: m?.file_format ?? undefined,
    codec: m?.codec ?? undefined,
    mimeType: m?.mime_type ?? undefined,
    duration: m?.duration ?? undefined,
    width: m?.width ?? undefined,
    height: m?.height ?? undefined,
    frameRate: m?.frame_rate ?? undefined,
    pixelFormat: m?.pixel_format ?? undefined,
    bitrateVideoKb: m?.bitrate_video_kb ?? undefined,
    bitrateAudioKb: m?.bitrate_audio_kb ?? undefined,
  };
  for (const [key, value] of Object.entries(media))
    if (value !== undefined && value !== null) (out as unknown as Record<string, unknown>)[key] = value;
  return out;
}

/** The whole status of a command's resource. */
export function statusOf(c: CommandRow, outputs: FfmpegCommandOutput[], now: Date, generation?: number): FfmpegCommandStatus {
  const end = c.finishedAt ?? now;
  return {
    commandId: c.id,
    phase: c.status === CommandStatus.PREPARED_FFMPEG_COMMAND ? CommandStatus.PROCESSING : c.status,
    stage: c.processingStage ?? '',
    currentStep: c.currentStep,
    jobNames: c.status === CommandStatus.QUEUED ? [] : [jobName(c.id, c.currentStep, c.attempt)],
    queuedAt: c.createdAt.toISOString(),
    startedAt: c.startedAt?.toISOString() ?? null,
    finishedAt: c.finishedAt?.toISOString() ?? null,
    durationSeconds: Math.round((end.getTime() - c.createdAt.getTime()) / 100) / 10,
    errorStatus: c.errorStatus ?? '',
    errorMessage: c.errorMessage ?? '',
    // As in a poll; null (and a null percent) removes it from the status, as a merge patch does.
    progress: progressView(c),
    outputs,
    conditions: conditionsOf(c, generation),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  };
}

/** The status of a resource that was not taken in: it never runs. */
export function refusedStatus(why: RefusalStatus, message: string, createdAt: Date, now: Date, generation?: number): FfmpegCommandStatus {
  const reason = {
    NAMESPACE_NOT_BOUND: 'NamespaceNotBound',
    INVALID_COMMAND: 'InvalidCommand',
    NOT_ALLOWED: 'NotAllowed',
  }[why];
  return {
    phase: CommandStatus.FAILED,
    stage: '',
    queuedAt: createdAt.toISOString(),
    finishedAt: now.toISOString(),
    durationSeconds: Math.max(0, Math.round((now.getTime() - createdAt.getTime()) / 100) / 10),
    errorStatus: why,
    errorMessage: message,
    outputs: [],
    conditions: [
      condition('Accepted', false, reason, message, now, generation),
      condition('Running', false, 'Refused', 'never runs', now, generation),
      condition('Succeeded', false, 'Refused', 'never runs', now, generation),
      condition('Failed', true, reason, message, now, generation),
    ],
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  };
}
