// The contract between the reconciler and the runner: what one command (or chain step) must do,
// and the events the runner reports back. The runner gets only URLs (presigned where needed), so it
// holds no storage credentials; in embedded mode the spec goes to a child process, in cluster mode
// into a Job.
import type { ParsedCommand } from '../command-line/parsed-command.ts';
import type { ErrorStatus } from '../commands/error-status.ts';
import type { MediaInfo } from '../media/media-info.ts';
import type { ReportedUpload } from './output-parts.ts';

/** What a runner may write when no setting says otherwise (FFOP_MAX_OUTPUT_FILE_BYTES, FFOP_MAX_OUTPUT_FILES). */
export const DEFAULT_MAX_OUTPUT_FILE_BYTES = 20 * 1024 ** 3;
/** Most files one playlist or OUTPUT_FOLDER output may hold. */
export const DEFAULT_MAX_OUTPUT_FILES = 1000;

export const ProcessingStage = {
  DOWNLOADING: 'DOWNLOADING',
  PREPARING_INPUT_FILES: 'PREPARING_INPUT_FILES',
  FFMPEG_PROCESSING: 'FFMPEG_PROCESSING',
  UPLOADING: 'UPLOADING',
} as const;
export type ProcessingStage = (typeof ProcessingStage)[keyof typeof ProcessingStage];

export interface StepInput {
  alias: string;
  /** The runner names the local copy after the URL's last path segment (made safe). */
  url: string;
  /** 'storage' URLs were minted by the service itself and skip the SSRF guard; 'external' never do. */
  source: 'external' | 'storage';
}

export interface StepOutput {
  alias: string;
  fileName: string;
  /**
   * 'file': the file itself is PUT to uploadUrl. 'playlist': the manifest and every file written next
   * to it are PUT as one zip (the reconciler unpacks it into storage). 'folder' (OUTPUT_FOLDER): a zip
   * of every file the command wrote into the working folder is PUT; that zip is the output.
   */
  kind: 'file' | 'playlist' | 'folder';
  /** Presigned URL that accepts one PUT of the whole file. */
  uploadUrl: string;
}

export interface StepSpec {
  commandId: string;
  /** 0-based index of this step in its command (always 0 for single commands). */
  step: number;
  command: ParsedCommand;
  inputs: StepInput[];
  /** input_compressed_folder: a zip extracted into the working folder before ffmpeg runs. */
  archive?: { url: string; source: 'external' | 'storage' };
  outputs: StepOutput[];
  /**
   * Cluster mode, and embedded mode with S3: an output (or playlist or folder zip) of at least this many bytes goes up in parts, by
   * a plan the runner asks the API for (core/jobs/output-parts.ts); absent, every output is one PUT.
   */
  multipartMinBytes?: number;
  /** Embedded mode: where this step asks for plans, as which Job, with its token (cluster mode: the runner's environment). */
  uploadPlans?: { url: string; jobName: string; token: string };
  /** ffmpeg threads (vcpu_count, capped at the cores the runner has). */
  threads: number;
  /** max_command_run_seconds: wall-clock cap on the ffmpeg process. */
  timeoutSeconds: number;
  download: {
    maxBytes: number;
    timeoutSeconds: number;
    /** SSRF exceptions: 'host:port' or CIDR entries that may be reached although not public. */
    allow: string[];
  };
}

export interface OutputResult {
  alias: string;
  fileName: string;
  /** Bytes of the file; for playlists and folders, of all their files together. */
  size: number;
  /** Playlists and folders: how many files, and the size of the zip that carried them. */
  fileCount?: number;
  compressedSize?: number;
  media: MediaInfo;
  /** Uploaded in parts: the upload the reconciler completes (core/engine/output-uploads.ts). */
  upload?: ReportedUpload;
}

export type RunnerEvent =
  | { type: 'stage'; stage: ProcessingStage }
  /** A piece of ffmpeg's stderr, in order (runner-image/log-forwarder.ts); the service keeps the last 1 MiB of each step. */
  | { type: 'log'; text: string }
  | {
      type: 'progress';
      outTimeSeconds: number;
      speed: number | null;
      /** How long the output is expected to be (the percentage's base); null when unknown. */
      durationSeconds: number | null;
    }
  | ({
      type: 'result';
      ok: true;
      ffmpegSeconds: number;
      inputBytes: number;
      outputs: OutputResult[];
    } & PhaseSeconds)
  | ({
      type: 'result';
      ok: false;
      errorStatus: ErrorStatus;
      errorMessage: string;
      ffmpegSeconds: number | null;
      inputBytes: number;
    } & PhaseSeconds);

/**
 * What the runner measured of its step besides ffmpeg (core/commands/timings.ts): fetching and preparing
 * the inputs (DOWNLOADING, PREPARING_INPUT_FILES) and probing and storing the outputs (UPLOADING), up to
 * the result or the failure. A phase the step did not reach is left out, as older runners leave both out.
 */
export type PhaseSeconds = {
  downloadSeconds?: number;
  uploadSeconds?: number;
};
