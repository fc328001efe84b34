// Webhook and delivery rows -> the JSON the webhook endpoints answer.
import type { DeliveryRow, WebhookRow } from '../../core/webhooks/webhooks-repo.ts';

export function webhookRecord(w: WebhookRow) {
  return {
    url: w.url,
    environment_name: w.environmentName,
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
  };
}

/** PUT's answer: the secret only when it is new (first set, or rotated). */
export function webhookRecordWithSecret(w: WebhookRow, newSecret: string | null) {
  const { url, ...rest } = webhookRecord(w);
  return { url, secret: newSecret, ...rest };
}

export function deliveryRecord(d: DeliveryRow) {
  return {
    delivery_id: d.id,
    event_type: d.eventType,
    subject_id: d.subjectId,
    status: d.status,
    attempt_count: d.attempts.length,
    attempts: d.attempts.map((a) => ({ at: a.at, status_code: a.statusCode, error: a.error, duration_ms: a.durationMs })),
    next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
    created_at: d.createdAt.toISOString(),
    finished_at: d.finishedAt?.toISOString() ?? null,
  };
}
