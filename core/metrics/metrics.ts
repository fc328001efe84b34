// Prometheus metrics of one process, in a registry of its own (never prom-client's global one), so that
// tests and several services in one process do not collide. Event counters and histograms live here;
// the state gauges, read from the database at scrape time, are in state-gauges.ts.
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { ErrorStatus } from '../commands/error-status.ts';
import { HttpLatencyHistogram } from './http-latency-histogram.ts';

/** What the engine reports as it runs commands and file tasks (core/engine/reconciler.ts, file-tasks.ts). */
export interface EngineMetrics {
  /** A QUEUED command started; waitSeconds is from its submission to now. */
  commandAdmitted(plan: string, waitSeconds: number): void;
  /** A command ended; totalSeconds is from its submission to its end (the poll record's total_processing_seconds). */
  commandEnded(status: 'SUCCESS' | 'FAILED', errorStatus: ErrorStatus | null, ffmpegSeconds: number, totalSeconds: number): void;
  fileTaskEnded(kind: FileTaskKind, outcome: FileTaskOutcome): void;
}

/** store_file: a store-file download; probe_upload: probing a completed direct upload; expire_upload: an abandoned upload cleaned up. */
export type FileTaskKind = 'store_file' | 'probe_upload' | 'expire_upload';
/** discarded: the file was deleted while the task ran, so its bytes were dropped. */
export type FileTaskOutcome = 'stored' | 'failed' | 'discarded';

export interface Metrics {
  registry: Registry;
  engine: EngineMetrics;
  /** One HTTP request answered; route is the matched route pattern (never the raw path) or "unmatched". */
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  /** One webhook delivery attempt, or a delivery given up without one (the webhook worker's onAttempt). */
  webhookAttempt(outcome: string): void;
}

const SECONDS_BUCKETS_LONG = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600];
const SECONDS_BUCKETS_QUEUE = [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600];
const SECONDS_BUCKETS_HTTP = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const METRICS_PREFIX = 'ffop_';

/** A fresh registry with the process's default metrics (ffop_process_*, ffop_nodejs_*) and ours. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRICS_PREFIX });
  const registers = [registry];

  const commandsFinished = new Counter({
    name: 'ffop_commands_finished_total',
    help: 'Commands that ended, by status and error_status (no error_status for SUCCESS).',
    labelNames: ['status', 'error_status'] as const,
    registers,
  });
  const queueWait = new Histogram({
    name: 'ffop_command_queue_wait_seconds',
    help: 'Time from submission to start of the commands started, by the plan of their account.',
    labelNames: ['plan'] as const,
    buckets: SECONDS_BUCKETS_QUEUE,
    registers,
  });
  const ffmpegSeconds = new Histogram({
    name: 'ffop_command_ffmpeg_seconds',
    help: "ffmpeg's run time of the commands that ended (all steps), by status.",
    labelNames: ['status'] as const,
    buckets: SECONDS_BUCKETS_LONG,
    registers,
  });
  const totalSeconds = new Histogram({
    name: 'ffop_command_total_seconds',
    help: 'Time from submission to end of the commands that ended (queue wait included), by status.',
    labelNames: ['status'] as const,
    buckets: SECONDS_BUCKETS_LONG,
    registers,
  });
  const fileTasks = new Counter({
    name: 'ffop_file_tasks_total',
    help: 'File tasks that ended: kind store_file, probe_upload or expire_upload; outcome stored, failed or discarded.',
    labelNames: ['kind', 'outcome'] as const,
    registers,
  });
  const httpDuration = new HttpLatencyHistogram({
    name: 'ffop_http_request_duration_seconds',
    help: 'HTTP request latency, by method, route pattern ("unmatched" when no route matched) and status code.',
    buckets: SECONDS_BUCKETS_HTTP,
    registry,
  });
  const webhookDeliveries = new Counter({
    name: 'ffop_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, failed_attempt (retried later) or gave_up (FAILED for good).',
    labelNames: ['outcome'] as const,
    registers,
  });

  return {
    registry,
    engine: {
      commandAdmitted: (plan, waitSeconds) => queueWait.observe({ plan }, Math.max(0, waitSeconds)),
      commandEnded: (status, errorStatus, ffmpeg, total) => {
        commandsFinished.inc(errorStatus ? { status, error_status: errorStatus } : { status });
        ffmpegSeconds.observe({ status }, Math.max(0, ffmpeg));
        totalSeconds.observe({ status }, Math.max(0, total));
      },
      fileTaskEnded: (kind, outcome) => fileTasks.inc({ kind, outcome }),
    },
    httpRequest: (method, route, status, seconds) => httpDuration.observe(method, route, status, seconds),
    webhookAttempt: (outcome) => webhookDeliveries.inc({ outcome }),
  };
}
