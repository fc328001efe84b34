// The rules of every JSON body (checked by jsonBody in api/schemas/validation.ts), stated for the OpenAPI document:
// strings without NUL, keys other than the reserved ones. Unpaired surrogates are in descriptions only: a
// pattern that tells them from pairs reads differently in UTF-16 (JavaScript) and in code points (most
// clients' regex engines).
import * as v from 'valibot';
import { RESERVED_KEYS, str } from './validation.ts';

export const TEXT_CHAR = '[^\\u0000]';
export const TEXT_PATTERN = `^${TEXT_CHAR}*$`;
const KEY = { pattern: TEXT_PATTERN, not: { enum: RESERVED_KEYS } };

/** Any JSON value the service takes: unknown properties of a body are ignored, but read (and so checked). */
export const STORABLE_JSON_NAME = 'StorableJson';
const storableJsonRef = { $ref: `#/components/schemas/${STORABLE_JSON_NAME}` };
export const STORABLE_JSON = {
  description:
    'Any JSON value whose strings and keys follow the rules of every body: no NUL, no unpaired surrogate, ' +
    `no ${RESERVED_KEYS.join('/')} key.`,
  anyOf: [
    { type: 'string', pattern: TEXT_PATTERN },
    { type: ['number', 'boolean', 'null'] },
    { type: 'array', items: storableJsonRef },
    { type: 'object', propertyNames: KEY, additionalProperties: storableJsonRef },
  ],
};

/** A string field with no pattern of its own: the document states the rule above. */
export const text = () => v.pipe(str(), v.metadata({ pattern: TEXT_PATTERN }));

/** A JSON object of a body: unknown properties are ignored, but follow the rules above. Examples are for the document. */
export const bodyObject = <E extends v.ObjectEntries>(entries: E, examples: unknown[] = []) =>
  v.pipe(
    v.object(entries),
    v.metadata({ propertyNames: KEY, additionalProperties: storableJsonRef, ...(examples.length ? { examples } : {}) }),
  );

/** JSON Schema keywords for the document, stating a check that valibot cannot convert (a rawCheck, a check). */
export const stated = <T>(keywords: Record<string, unknown>) => v.metadata<T, Record<string, unknown>>(keywords);
