// The shapes of the API's answers that the dashboard reads (see docs/api.md).

export type CommandStatus = 'QUEUED' | 'PROCESSING' | 'PREPARED_FFMPEG_COMMAND' | 'FAILED' | 'SUCCESS';

export interface Progress {
  percent: number | null;
  out_time_seconds: number;
  speed: number | null;
}

export interface CommandListItem {
  command_id: string;
  status: CommandStatus;
  created_at: string;
  output_file_count: number;
  ffmpeg_command_run_seconds: number;
  processing_seconds: number;
  processing_stage: string | null;
  error_status: string | null;
  error_message: string | null;
  /** ffmpeg's progress while PROCESSING (null otherwise, and from a service before issue 32: absent). */
  progress?: Progress | null;
}

export interface OutputFile {
  file_id: string;
  storage_url: string;
  file_type: string | null;
  file_format: string | null;
  codec: string | null;
  mime_type: string | null;
  duration: number | null;
  width: number | null;
  height: number | null;
  size_mbytes: number | null;
  is_deleted: boolean;
  is_private: boolean;
}

export interface CommandRecord {
  command_id: string;
  command_type: string;
  environment_name: string;
  status: CommandStatus;
  processing_stage: string | null;
  error_status: string | null;
  error_message: string | null;
  original_request: {
    ffmpeg_command?: string;
    ffmpeg_commands?: string[];
    input_files?: Record<string, string> | null;
    input_compressed_folder?: string | null;
    output_files?: Record<string, string> | string;
  } | null;
  total_processing_seconds: number;
  ffmpeg_command_run_seconds: number;
  vcpu_count: number;
  output_files: Record<string, OutputFile>;
  metadata: Record<string, string | number | boolean> | null;
  created_at?: string;
  progress?: Progress | null;
}

export interface StoredFile {
  file_id: string;
  storage_url: string;
  status: string;
  service_store_type: string;
  error_status: string | null;
  external_error_message: string | null;
  size_mbytes: number | null;
  is_private: boolean;
  original_file_url: string | null;
  file_type: string | null;
  mime_type: string | null;
  duration: number | null;
  width: number | null;
  height: number | null;
  created_at?: string;
}

export interface UploadSession {
  file_id: string;
  part_size: number;
  upload_urls: string[];
}

export interface Webhook {
  url: string;
  environment_name: string;
  created_at: string;
  updated_at: string;
}

export interface WebhookWithSecret extends Webhook {
  /** Only when the webhook was first set or its secret rotated: shown once. */
  secret: string | null;
}

export interface DeliveryAttempt {
  at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

export interface Delivery {
  delivery_id: string;
  event_type: string;
  subject_id: string | null;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempt_count: number;
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
  created_at: string;
  finished_at: string | null;
}
