// The Idempotency-Key header in the OpenAPI document of the routes that take it (api/middleware/idempotency.ts).
import { IDEMPOTENCY_KEY_PATTERN, MAX_IDEMPOTENCY_KEY_LENGTH } from '../../core/idempotency/idempotency-key.ts';
import { responses } from './components.ts';

export const idempotencyKeyParameter = {
  name: 'Idempotency-Key',
  in: 'header' as const,
  required: false,
  description:
    'Makes the request safe to send again: within 24 hours, the same key from the same API key with the same request ' +
    '(method, path and body bytes) answers the first answer again (same status and body, with the header ' +
    '`Idempotent-Replayed: true`) and creates nothing new. The same key with a different request is a 422 naming the ' +
    'header. A repeat sent while the first is still being answered waits for its answer (up to 30 s), then 409.',
  schema: { type: 'string' as const, minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, pattern: IDEMPOTENCY_KEY_PATTERN },
};

export const idempotencyResponses = {
  409: responses.json(
    responses.detailString,
    'A request with the same Idempotency-Key is still being processed; send it again after Retry-After to get its answer',
  ),
};
