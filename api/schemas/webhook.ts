// The webhook endpoints: the request body of PUT /v1/webhook, and the answers for the OpenAPI document.
import * as v from 'valibot';
import { MAX_WEBHOOK_URL_CHARS } from '../../core/webhooks/webhook-url.ts';
import { jsonBool, maxChars, msg, str } from './validation.ts';
import { bodyObject, TEXT_CHAR } from './body.ts';
import { isHttpUrl } from './http-url.ts';

// The document's pattern is a form always accepted: http(s), a host name (as api/schemas/http-url.ts
// writes it: no '--', a last label starting with a letter), an optional port, no credentials. IP
// literals are accepted too when public (or allowed): the description says so.
const label = '[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*';
const hostName = `(?:${label}\\.)*[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*\\.?`;
const port = '(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})';
export const WEBHOOK_URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://${hostName}(?::${port})?(?:[/?#]${TEXT_CHAR}*)?$`;

const URL_DESCRIPTION =
  'Where the service POSTs its webhook messages: an http or https URL without user credentials, at most ' +
  `${MAX_WEBHOOK_URL_CHARS} characters. An IP literal host (also IPv6) is accepted when it is a public address or ` +
  'FFOP_ALLOW_ADDRESSES allows it, else refused (422); a host name is resolved and checked at each attempt.';

const hasNoCredentials = (s: string) => {
  try {
    const u = new URL(s);
    return u.username === '' && u.password === '';
  } catch {
    return true; // not a URL: the check before says so
  }
};

const webhookUrl = v.pipe(
  str(),
  maxChars(MAX_WEBHOOK_URL_CHARS),
  v.check(isHttpUrl, msg('url_parsing', 'Input should be a valid URL with an http or https scheme')),
  v.check(hasNoCredentials, msg('value_error', 'Value error, a webhook URL must not hold user credentials')),
  v.metadata({ format: 'uri', pattern: WEBHOOK_URL_PATTERN, description: URL_DESCRIPTION }),
);

export const setWebhookSchema = bodyObject(
  {
    url: webhookUrl,
    rotate_secret: v.optional(jsonBool(), false),
  },
  [{ url: 'https://example.com/hooks/ffmpeg' }],
);

const dateTime = { type: 'string', format: 'date-time' };
const webhookFields = {
  url: { type: 'string', description: 'The URL as it was set.' },
  environment_name: { type: 'string' },
  created_at: dateTime,
  updated_at: dateTime,
};

export const webhookSchema = {
  type: 'object',
  properties: webhookFields,
  required: Object.keys(webhookFields),
};

export const webhookWithSecretSchema = {
  type: 'object',
  properties: {
    ...webhookFields,
    secret: {
      type: ['string', 'null'],
      pattern: '^whsec_',
      description: 'The signing secret, shown when the webhook is first set or rotate_secret is true; null otherwise.',
    },
  },
  required: [...Object.keys(webhookFields), 'secret'],
};

export const testDeliverySchema = {
  type: 'object',
  properties: { delivery_id: { type: 'string', format: 'uuid' } },
  required: ['delivery_id'],
};

const attemptSchema = {
  type: 'object',
  properties: {
    at: dateTime,
    status_code: { type: ['integer', 'null'], description: "The receiver's HTTP status; null when none came." },
    error: {
      type: ['string', 'null'],
      description: 'Why the attempt failed (status, timeout, refused address, ...); null when delivered.',
    },
    duration_ms: { type: 'integer', minimum: 0 },
  },
  required: ['at', 'status_code', 'error', 'duration_ms'],
};

const deliveryFields = {
  delivery_id: { type: 'string', format: 'uuid', description: 'The webhook-id header is "msg_" + this, the same on every attempt.' },
  event_type: { type: 'string', enum: ['command.finished', 'file.finished', 'webhook.test'] },
  subject_id: { type: ['string', 'null'], format: 'uuid', description: 'The command or file announced; null for a test.' },
  status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED'] },
  attempt_count: { type: 'integer', minimum: 0 },
  attempts: { type: 'array', items: attemptSchema },
  next_attempt_at: { ...dateTime, type: ['string', 'null'], description: 'When PENDING: when the next attempt is due.' },
  created_at: dateTime,
  finished_at: { ...dateTime, type: ['string', 'null'] },
};

export const deliverySchema = {
  type: 'object',
  properties: deliveryFields,
  required: Object.keys(deliveryFields),
};
