// Every error status a command (or stored file) can end with. docs/api.md and the OpenAPI document
// list these same values; keep the three in step.
export const ErrorStatus = {
  /** An input URL could not be fetched: DNS failure, refused connection, HTTP error status, timeout. */
  UNREACHABLE_INPUT_FILE: 'UNREACHABLE_INPUT_FILE',
  /** An input URL does not end in a usable file name (e.g. `https://host/` or `https://host/dir/`). */
  INVALID_INPUT_FILE_NAME: 'INVALID_INPUT_FILE_NAME',
  /** An input URL points at an address the service refuses to reach (loopback, private, link-local...). */
  FORBIDDEN_INPUT_ADDRESS: 'FORBIDDEN_INPUT_ADDRESS',
  /** An input is larger than the configured download size limit. */
  INPUT_FILE_TOO_LARGE: 'INPUT_FILE_TOO_LARGE',
  /** input_compressed_folder is not a zip the service accepts (traversal, symlinks, too big, a bomb). */
  INVALID_INPUT_ARCHIVE: 'INVALID_INPUT_ARCHIVE',
  /** ffmpeg exited with a non-zero status; error_message carries the tail of its stderr. */
  FFMPEG_FAILED: 'FFMPEG_FAILED',
  /** ffmpeg ran longer than max_command_run_seconds and was killed. */
  FFMPEG_TIMEOUT: 'FFMPEG_TIMEOUT',
  /** ffmpeg succeeded but a declared output file was not produced (or is empty). */
  OUTPUT_FILE_NOT_CREATED: 'OUTPUT_FILE_NOT_CREATED',
  /** A playlist or OUTPUT_FOLDER output holds more files than allowed (FFOP_MAX_OUTPUT_FILES). */
  TOO_MANY_OUTPUT_FILES: 'TOO_MANY_OUTPUT_FILES',
  /** An output could not be written to storage. */
  OUTPUT_UPLOAD_FAILED: 'OUTPUT_UPLOAD_FAILED',
  /** The service's disk was full (downloading an input, ffmpeg's output, storing a file); not the request's fault. */
  OUT_OF_SPACE: 'OUT_OF_SPACE',
  /** A step as a whole (downloads, ffmpeg and uploads) ran past its deadline and was stopped. */
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  /** A direct upload was aborted by the client (abort-upload). */
  UPLOAD_ABORTED: 'UPLOAD_ABORTED',
  /** A direct upload was neither completed nor aborted in time and was cleaned up. */
  UPLOAD_EXPIRED: 'UPLOAD_EXPIRED',
  /** Storing the file would have exceeded the account's storage quota. */
  STORAGE_QUOTA_EXCEEDED: 'STORAGE_QUOTA_EXCEEDED',
  /** A queued command asks for more vCPUs than its account's plan allows now (the plan changed). */
  PLAN_LIMIT_EXCEEDED: 'PLAN_LIMIT_EXCEEDED',
  /** Cluster mode: the command's FfmpegCommand resource was deleted; its Job was stopped. */
  CANCELLED: 'CANCELLED',
  /** The command's step was lost (the service restarted, its node died or was drained) too many times to try again. */
  INTERRUPTED: 'INTERRUPTED',
  /** Cluster mode: the step asks more vCPUs, memory or disk than the largest node of the cluster has. */
  UNSCHEDULABLE: 'UNSCHEDULABLE',
  /** An unexpected failure inside the service; error_message says what happened. */
  INTERNAL_ERROR: 'INTERNAL_ERROR',
} as const;
export type ErrorStatus = (typeof ErrorStatus)[keyof typeof ErrorStatus];
