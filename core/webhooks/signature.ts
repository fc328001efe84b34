// Standard Webhooks signatures (https://www.standardwebhooks.com): the receiver checks
// `webhook-signature` = "v1," + base64(HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")),
// where the key is the base64 after "whsec_" in the secret the account was shown.
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new signing secret: "whsec_" + base64 of 24 random bytes. */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(24).toString('base64');
}

/** The value of the `webhook-signature` header. */
export function signWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  if (!secret.startsWith(PREFIX)) throw new Error('a webhook secret starts with whsec_');
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The headers of one attempt; `webhook-timestamp` is the attempt's own time, in seconds. */
export function signedHeaders(secret: string, messageId: string, now: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secret, messageId, timestamp, body),
  };
}
