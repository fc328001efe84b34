// Response schemas of the OpenAPI document (requests come from the valibot schemas).
import { ErrorStatus } from '../../core/commands/error-status.ts';
import { CommandStatus, CommandType } from '../../core/commands/command-status.ts';
import { ProcessingStage } from '../../core/jobs/step-spec.ts';
import { queueFields, timingsSchema } from './timings-components.ts';

const num = { type: ['number', 'null'] };
const int = { type: ['integer', 'null'] };
const strOrNull = { type: ['string', 'null'] };

export const ERROR_STATUS_DOC: Record<string, string> = {
  UNREACHABLE_INPUT_FILE: 'An input URL could not be fetched (DNS, connection, HTTP error status, timeout).',
  INVALID_INPUT_FILE_NAME: "An input URL, or store-file's file_url, does not end in a file name; nothing is fetched.",
  FORBIDDEN_INPUT_ADDRESS: 'An input URL resolves to a non-public address (loopback, private, link-local, ...).',
  INPUT_FILE_TOO_LARGE: 'An input is larger than the download size limit.',
  INVALID_INPUT_ARCHIVE:
    'input_compressed_folder is not a zip the service accepts (names outside the folder, symlinks, too many entries or bytes, a zip bomb).',
  FFMPEG_FAILED:
    "ffmpeg exited with an error; error_message starts with the lines of ffmpeg's output that state the cause, " +
    "then '--' and the tail of what it printed.",
  FFMPEG_TIMEOUT: 'ffmpeg ran longer than max_command_run_seconds and was stopped.',
  OUTPUT_FILE_NOT_CREATED: 'ffmpeg succeeded but did not write a declared output file.',
  TOO_MANY_OUTPUT_FILES: 'A playlist or OUTPUT_FOLDER output holds more files than one output may (FFOP_MAX_OUTPUT_FILES, default 1000).',
  OUTPUT_UPLOAD_FAILED: 'An output could not be written to storage.',
  OUT_OF_SPACE:
    "The service's disk was full while it downloaded an input, ffmpeg wrote an output, or an output or file was stored; " +
    'nothing is wrong with the request: try again later. error_message says which write it was.',
  UPLOAD_ABORTED: 'Files: a direct upload was aborted (abort-upload).',
  UPLOAD_EXPIRED: 'Files: a direct upload was neither completed nor aborted in time and was cleaned up.',
  STORAGE_QUOTA_EXCEEDED: "Files: storing the file would have exceeded the account's storage quota.",
  PLAN_LIMIT_EXCEEDED: "A queued command asks for more vCPUs than its account's plan allows now (the plan changed after it was submitted).",
  CANCELLED: 'The command was cancelled (POST /v1/commands/{command_id}/cancel, or in cluster mode its FfmpegCommand was deleted).',
  DEADLINE_EXCEEDED: 'The step as a whole (downloads, ffmpeg, uploads) passed its deadline.',
  INTERRUPTED:
    'A step was lost too many times to try again: the service restarted while it ran, or (cluster mode) its node died or was drained (3 starts of a step by default).',
  UNSCHEDULABLE:
    'Cluster mode: the step asks more vCPUs, memory or disk than the largest node of the cluster has; error_message names that node and its size.',
  INTERNAL_ERROR: 'An unexpected failure inside the service; error_message says what happened.',
};
// Keep the document and the code in step.
for (const s of Object.values(ErrorStatus)) if (!ERROR_STATUS_DOC[s]) throw new Error(`undocumented error status ${s}`);

export const errorStatusDescription =
  'Set when the command failed. Values:\n' +
  Object.entries(ERROR_STATUS_DOC)
    .map(([k, v]) => `- ${k}: ${v}`)
    .join('\n');

export const outputFileEntrySchema = {
  type: 'object',
  properties: {
    file_id: { type: 'string', format: 'uuid' },
    storage_url: { type: 'string', format: 'uri' },
    file_type: strOrNull,
    file_format: strOrNull,
    codec: strOrNull,
    mime_type: strOrNull,
    duration: num,
    width: int,
    height: int,
    frame_rate: num,
    is_varying_frame_rate: { type: ['boolean', 'null'] },
    timebase: strOrNull,
    pixel_format: strOrNull,
    bitrate_video_kb: num,
    bitrate_audio_kb: num,
    size_mbytes: num,
    file_count: { type: 'integer', description: 'Files in a playlist or OUTPUT_FOLDER output (1 otherwise).' },
    size_compressed_mbytes: { ...num, description: 'Size of the zip of an OUTPUT_FOLDER or playlist output.' },
    is_deleted: { type: 'boolean' },
    is_private: { type: 'boolean' },
    status: { type: 'string', enum: ['STORED'], description: 'Outputs are listed once stored.' },
  },
};

const errorFields = {
  processing_stage: {
    type: ['string', 'null'],
    enum: [...Object.values(ProcessingStage), null],
    description: 'Stage while PROCESSING; the last stage reached when FAILED.',
  },
  queue_reason: {
    type: ['string', 'null'],
    description:
      'Cluster mode: why a QUEUED command that had started waits in the queue again (its pod found no node with room; it keeps its place and no deadline runs while it waits). Null otherwise.',
  },
  error_status: { type: ['string', 'null'], enum: [...Object.values(ErrorStatus), null], description: errorStatusDescription },
  error_message: { type: ['string', 'null'], description: 'Human-readable details when the command failed.' },
  retry_of: {
    type: ['string', 'null'],
    format: 'uuid',
    description: 'The FAILED command this one runs again (POST /v1/commands/{command_id}/retry); null otherwise.',
  },
  retried_by: {
    type: ['string', 'null'],
    format: 'uuid',
    description: 'The command that runs this FAILED one again; null until it is retried.',
  },
};

const progressSchema = {
  type: ['object', 'null'],
  description: "How far ffmpeg is in the current step, from ffmpeg's own progress report; null unless PROCESSING and ffmpeg has reported.",
  properties: {
    percent: {
      type: ['number', 'null'],
      minimum: 0,
      maximum: 100,
      description:
        "out_time_seconds as a percentage of the output's expected duration (the inputs' durations, -t/-to), one decimal; " +
        'null when that is unknown.',
    },
    out_time_seconds: { type: 'number', minimum: 0, description: 'Seconds of output written so far.' },
    speed: { type: ['number', 'null'], minimum: 0, description: "Media seconds per wall-clock second (ffmpeg's speed, 1.5 for 1.5x)." },
  },
  required: ['percent', 'out_time_seconds', 'speed'],
};

export const commandRecordSchema = {
  type: 'object',
  properties: {
    command_id: { type: 'string', format: 'uuid' },
    command_type: { type: 'string', enum: Object.values(CommandType) },
    environment_name: { type: 'string' },
    status: { type: 'string', enum: Object.values(CommandStatus) },
    ...errorFields,
    progress: progressSchema,
    ...queueFields,
    timings: timingsSchema,
    original_request: { type: 'object' },
    total_processing_seconds: { type: 'number' },
    ffmpeg_command_run_seconds: { type: 'number' },
    vcpu_count: { type: 'integer' },
    output_files: { type: 'object', additionalProperties: outputFileEntrySchema },
    processing_quota_used: { type: 'number', minimum: 0, description: 'MB (10^6 bytes) downloaded and produced.' },
    metadata: { type: ['object', 'null'] },
    created_at: { type: 'string', format: 'date-time' },
  },
};

export const commandListItemSchema = {
  type: 'object',
  properties: {
    command_id: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: Object.values(CommandStatus) },
    environment_name: { type: 'string' },
    created_at: { type: 'string', format: 'date-time' },
    storage_quota_used: { type: 'number', minimum: 0 },
    processing_quota_used: { type: 'number', minimum: 0 },
    output_file_count: { type: 'integer', minimum: 0 },
    ffmpeg_command_run_seconds: { type: 'number' },
    processing_seconds: { type: 'number' },
    ...errorFields,
    progress: progressSchema,
    timings: timingsSchema,
  },
};

export const submissionSchema = {
  type: 'object',
  properties: { command_id: { type: 'string', format: 'uuid' } },
  required: ['command_id'],
};

const detailString = { type: 'object', properties: { detail: { type: 'string' } } };
export const validationErrorSchema = {
  type: 'object',
  properties: {
    detail: {
      type: 'array',
      items: {
        type: 'object',
        properties: { loc: { type: 'array', items: { type: ['string', 'integer'] } }, msg: { type: 'string' }, type: { type: 'string' } },
        required: ['loc', 'msg', 'type'],
      },
    },
  },
};

const json = (schema: object, description: string) => ({ description, content: { 'application/json': { schema } } });
export const commonResponses = {
  401: json(detailString, 'Missing or invalid API key'),
  413: json(detailString, 'Request body too large'),
  422: json(validationErrorSchema, 'Validation error'),
  429: json(detailString, 'Rate limit exceeded; see the Retry-After header'),
  503: json(detailString, 'The service cannot reach its database right now; retry after the Retry-After header'),
};
export const responses = { json, detailString };

export const storedFileSchema = {
  type: 'object',
  properties: {
    file_id: { type: 'string', format: 'uuid' },
    environment_name: { type: 'string' },
    storage_url: {
      type: 'string',
      format: 'uri',
      description: 'Presigned only for stored private files when presigned_ttl_seconds is given.',
    },
    status: { type: 'string', enum: ['QUEUED', 'DOWNLOADING', 'DOWNLOADED', 'UPLOADED', 'FAILED', 'STORED'] },
    service_store_type: { type: 'string', enum: ['INPUT', 'OUTPUT', 'STORED_FILE'] },
    error_status: { type: ['string', 'null'], description: errorStatusDescription },
    external_error_message: strOrNull,
    is_deleted: { type: 'boolean' },
    size_mbytes: num,
    file_count: int,
    size_compressed_mbytes: num,
    is_private: { type: 'boolean' },
    original_file_url: strOrNull,
    ...Object.fromEntries(
      Object.entries(outputFileEntrySchema.properties).filter(
        ([k]) =>
          !['file_id', 'storage_url', 'size_mbytes', 'file_count', 'size_compressed_mbytes', 'is_deleted', 'is_private', 'status'].includes(
            k,
          ),
      ),
    ),
    video_profile_level: strOrNull,
    created_at: { type: 'string', format: 'date-time' },
  },
};

export const uploadSessionSchema = {
  type: 'object',
  properties: {
    file_id: { type: 'string', format: 'uuid' },
    part_size: { type: 'integer', description: 'Bytes of every part but the last, which is the remainder.' },
    upload_urls: { type: 'array', items: { type: 'string', format: 'uri' }, description: 'Presigned PUT URL of part k at index k-1.' },
  },
};
