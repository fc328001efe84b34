// The webhook of the caller's account and environment (the API key's): set, read, remove, test,
// and its delivery log. Deliveries are sent by api/webhooks/webhook-worker.ts, never from here.
import { Hono, type Context } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AddressPolicy } from '../../core/net/address-policy.ts';
import { literalAddressProblem } from '../../core/webhooks/webhook-url.ts';
import type { WebhooksRepo } from '../../core/webhooks/webhooks-repo.ts';
import type { AppEnv } from '../middleware/auth.ts';
import { commonResponses, responses } from '../openapi/components.ts';
import { jsonRequestBody, queryParameters } from '../openapi/requests.ts';
import { listQuerySchema } from '../schemas/commands.ts';
import { deliverySchema, setWebhookSchema, testDeliverySchema, webhookSchema, webhookWithSecretSchema } from '../schemas/webhook.ts';
import { invalid, jsonBody, queryParams } from '../schemas/validation.ts';
import { deliveryRecord, webhookRecord, webhookRecordWithSecret } from '../webhooks/serialize.ts';

export interface WebhookRoutesDeps {
  webhooks: WebhooksRepo;
  /** FFOP_ALLOW_ADDRESSES, as downloads use it: which IP-literal hosts may be set. */
  addressPolicy: AddressPolicy;
  clock: () => Date;
}

const noWebhook = (c: Context<AppEnv>) => c.json({ detail: `no webhook is set for environment ${c.get('caller').environment}` }, 404);
const notSet = { 404: responses.json(responses.detailString, 'No webhook is set for the environment of the API key') };

export function webhookRoutes(d: WebhookRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.put(
    '/v1/webhook',
    describeRoute({
      summary: 'Set the webhook of the environment of the API key',
      description:
        'Ended commands (SUCCESS, FAILED) and stored files (STORED, FAILED) of this account and environment are POSTed ' +
        'to the URL as {"data": <the GET record>, "timestamp": <unix ms>}, signed as Standard Webhooks specifies. ' +
        'The secret is shown when the webhook is first set and when rotate_secret is true; changing only the URL keeps it.',
      tags: ['webhooks'],
      requestBody: jsonRequestBody(setWebhookSchema),
      responses: { 200: responses.json(webhookWithSecretSchema, 'The webhook'), ...commonResponses },
    }),
    async (c) => {
      const req = await jsonBody(c, setWebhookSchema);
      const problem = literalAddressProblem(new URL(req.url), d.addressPolicy);
      if (problem) throw invalid(['body', 'url'], `Value error, ${problem}`);
      const caller = c.get('caller');
      const { row, newSecret } = await d.webhooks.set(caller.account.id, caller.environment, req.url, req.rotate_secret, d.clock());
      return c.json(webhookRecordWithSecret(row, newSecret));
    },
  );

  app.get(
    '/v1/webhook',
    describeRoute({
      summary: 'Read the webhook of the environment of the API key',
      tags: ['webhooks'],
      responses: { 200: responses.json(webhookSchema, 'The webhook (its secret is never shown again)'), ...notSet, ...commonResponses },
    }),
    async (c) => {
      const caller = c.get('caller');
      const row = await d.webhooks.find(caller.account.id, caller.environment);
      return row ? c.json(webhookRecord(row)) : noWebhook(c);
    },
  );

  app.delete(
    '/v1/webhook',
    describeRoute({
      summary: 'Remove the webhook of the environment of the API key',
      description: 'Its PENDING deliveries end FAILED with the error "webhook removed".',
      tags: ['webhooks'],
      responses: { 204: { description: 'Removed' }, ...notSet, ...commonResponses },
    }),
    async (c) => {
      const caller = c.get('caller');
      const removed = await d.webhooks.delete(caller.account.id, caller.environment, d.clock());
      return removed ? c.body(null, 204) : noWebhook(c);
    },
  );

  app.post(
    '/v1/webhook/test',
    describeRoute({
      summary: 'Send a test delivery',
      description:
        'Queues a delivery of {"data": {"message": "test delivery from ffmpeg-operator", "environment_name": ...}, ' +
        '"timestamp": <unix ms>}; follow it in GET /v1/webhook/deliveries. At most 10 test deliveries a minute per ' +
        'account, and at most 20 still PENDING; past that, 429 with Retry-After.',
      tags: ['webhooks'],
      responses: { 202: responses.json(testDeliverySchema, 'Queued'), ...notSet, ...commonResponses },
    }),
    async (c) => {
      const caller = c.get('caller');
      const queued = await d.webhooks.addTestDelivery(caller.account.id, caller.environment);
      if (queued === null) return noWebhook(c);
      if ('id' in queued) return c.json({ delivery_id: queued.id }, 202);
      return c.json({ detail: `Too many test deliveries: ${queued.reason}; retry after ${queued.retryAfterSeconds} s` }, 429, {
        'retry-after': String(queued.retryAfterSeconds),
      });
    },
  );

  app.get(
    '/v1/webhook/deliveries',
    describeRoute({
      summary: 'The delivery log of the environment of the API key, newest first',
      description: 'Each delivery with its attempts (time, status code, error, duration) and, while PENDING, its next attempt.',
      tags: ['webhooks'],
      parameters: queryParameters(listQuerySchema),
      responses: { 200: responses.json({ type: 'array', items: deliverySchema }, 'Deliveries'), ...commonResponses },
    }),
    async (c) => {
      const { limit, offset } = queryParams(c, listQuerySchema);
      const caller = c.get('caller');
      const rows = await d.webhooks.listDeliveries(caller.account.id, caller.environment, limit, offset);
      return c.json(rows.map(deliveryRecord));
    },
  );

  return app;
}
