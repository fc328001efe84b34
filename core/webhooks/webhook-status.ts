export const DeliveryStatus = {
  PENDING: 'PENDING',
  DELIVERED: 'DELIVERED',
  FAILED: 'FAILED',
} as const;
export type DeliveryStatus = (typeof DeliveryStatus)[keyof typeof DeliveryStatus];

/** What a delivery announces: a command that ended, a stored file that ended, or a test asked for. */
export const WebhookEvent = {
  COMMAND_FINISHED: 'command.finished',
  FILE_FINISHED: 'file.finished',
  TEST: 'webhook.test',
} as const;
export type WebhookEvent = (typeof WebhookEvent)[keyof typeof WebhookEvent];
