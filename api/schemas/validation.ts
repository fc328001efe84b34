// Request validation with FastAPI's error shape, so clients written for the spec parse our 422s:
//   {"detail":[{"loc":["body","field",...],"msg":"...","type":"..."}]}
// Types and messages follow pydantic v2's wording. Numbers, integers and booleans are parsed leniently
// like pydantic's lax mode ("300" and 8.0 are accepted), because existing clients may send them so.
import type { Context } from 'hono';
import * as v from 'valibot';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.ts';
import { EventLoopTurns } from './event-loop-turns.ts';

export interface ErrorItem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class RequestInvalid extends Error {
  readonly detail: ErrorItem[];
  constructor(detail: ErrorItem[]) {
    super(detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'RequestInvalid';
    this.detail = detail;
  }
}

export function invalid(loc: (string | number)[], msg: string, type = 'value_error'): RequestInvalid {
  return new RequestInvalid([{ loc, msg, type }]);
}

// A message of the form "<pydantic type>\u0000<text>" carries its own error type through valibot.
const SEP = '\u0000';
export const msg = (type: string, text: string) => `${type}${SEP}${text}`;

type Issue = v.BaseIssue<unknown>;

const TYPE_BY_VALIBOT: Record<string, string> = {
  string: 'string_type',
  number: 'float_type',
  boolean: 'bool_type',
  object: 'dict_type',
  loose_object: 'dict_type',
  record: 'dict_type',
  array: 'list_type',
  literal: 'literal_error',
  regex: 'string_pattern_mismatch',
  uuid: 'uuid_parsing',
  check: 'value_error',
  min_value: 'greater_than_equal',
  max_value: 'less_than_equal',
  gt_value: 'greater_than',
};

function issueToItem(issue: Issue, prefix: (string | number)[]): ErrorItem[] {
  if (issue.type === 'union' && issue.issues?.length) {
    // Report the branch that got furthest into the value: its issues say what is wrong.
    const depth = (i: Issue) => i.path?.length ?? 0;
    const deepest = Math.max(...issue.issues.map(depth));
    if (deepest > (issue.path?.length ?? 0)) {
      return issue.issues.filter((i) => depth(i) === deepest).flatMap((i) => issueToItem(i, prefix));
    }
  }
  const loc = [...prefix, ...(issue.path ?? []).map((p) => p.key as string | number)];
  if (issue.kind === 'schema' && issue.received === 'undefined' && issue.type !== 'union') {
    return [{ loc, msg: 'Field required', type: 'missing' }];
  }
  const [maybeType, text] = issue.message.split(SEP);
  if (text !== undefined) return [{ loc, msg: text, type: maybeType }];
  let type = TYPE_BY_VALIBOT[issue.type] ?? 'value_error';
  if (issue.type === 'max_length') type = typeof issue.input === 'string' ? 'string_too_long' : 'too_long';
  if (issue.type === 'min_length') type = typeof issue.input === 'string' ? 'string_too_short' : 'too_short';
  return [{ loc, msg: issue.message, type }];
}

export function parseWith<S extends v.GenericSchema>(schema: S, input: unknown, prefix: (string | number)[]): v.InferOutput<S> {
  const result = v.safeParse(schema, input, { abortPipeEarly: true });
  if (result.success) return result.output;
  const seen = new Set<string>();
  const detail = result.issues
    .flatMap((i) => issueToItem(i as Issue, prefix))
    .filter((d) => {
      const key = JSON.stringify(d);
      return seen.has(key) ? false : (seen.add(key), true);
    });
  throw new RequestInvalid(detail);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const JSON_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
// Keys that JavaScript objects treat specially: a schema would drop them without a word.
export const RESERVED_KEYS = ['__proto__', 'constructor', 'prototype'];
const RESERVED = new Set(RESERVED_KEYS);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Strings the database cannot store (NUL, unpaired surrogates) and reserved keys: 422, not a 500. */
function checkJsonValues(value: unknown, loc: (string | number)[]): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000') || LONE_SURROGATE.test(value)) {
      throw invalid(loc, 'Input should be a valid string: NUL characters and unpaired surrogates are not allowed', 'string_unicode');
    }
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => checkJsonValues(v, [...loc, i]));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      checkJsonValues(k, [...loc, k]);
      if (RESERVED.has(k)) throw invalid([...loc, k], `Value error, "${k}" is not allowed as a key`);
      checkJsonValues(v, [...loc, k]);
    }
  }
}

/** Bodies are parsed and checked one per event-loop turn (event-loop-turns.ts says why). */
const BODY_TURNS = new EventLoopTurns();

/**
 * Reads and validates a JSON body. Malformed JSON, other content types and non-object bodies are 422s
 * like FastAPI's. It resolves in a turn of the event loop of its own, which the route's synchronous
 * work right after (a submit's command line) shares.
 */
export async function jsonBody<S extends v.GenericSchema>(c: Context, schema: S): Promise<v.InferOutput<S>> {
  const notAnObject = () =>
    invalid(['body'], 'Input should be a valid dictionary or object to extract fields from', 'model_attributes_type');
  if (!JSON_TYPE.test(c.req.header('content-type') ?? '')) throw notAnObject();
  const decodeError = (err: unknown) =>
    new RequestInvalid([{ loc: ['body', 0], msg: `JSON decode error: ${(err as Error).message}`, type: 'json_invalid' }]);
  let text: string;
  try {
    text = UTF8.decode(await c.req.arrayBuffer());
  } catch (err) {
    throw decodeError(err);
  }
  await BODY_TURNS.take();
  // Before parsing: the checks below and the schema walk the value recursively.
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
    throw new RequestInvalid([
      { loc: ['body'], msg: `JSON decode error: arrays and objects nested deeper than ${MAX_JSON_DEPTH} levels`, type: 'json_invalid' },
    ]);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw decodeError(err);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw notAnObject();
  return parseBody(schema, body);
}

/** A decoded JSON body (or one made from an FfmpegCommand's spec), checked as every body is. */
export function parseBody<S extends v.GenericSchema>(schema: S, body: object): v.InferOutput<S> {
  checkJsonValues(body, ['body']);
  return parseWith(schema, body, ['body']);
}

export function queryParams<S extends v.GenericSchema>(c: Context, schema: S): v.InferOutput<S> {
  return parseWith(schema, c.req.query(), ['query']);
}

// Lenient scalars, pydantic style.

/** The range of JavaScript numbers, for the document. */
export const FINITE = { minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE };

export function laxNumber() {
  return v.pipe(
    v.unknown(),
    v.rawTransform<unknown, number>(({ dataset, addIssue, NEVER }) => {
      const x = dataset.value;
      if (typeof x === 'number' && Number.isFinite(x)) return x;
      if (typeof x === 'string' && x.trim() !== '' && Number.isFinite(Number(x))) return Number(x);
      addIssue({
        message: msg(
          typeof x === 'string' ? 'float_parsing' : 'float_type',
          typeof x === 'string' ? 'Input should be a valid number, unable to parse string as a number' : 'Input should be a valid number',
        ),
      });
      return NEVER;
    }),
    // For the OpenAPI document (the transform itself has no JSON Schema): a JSON number past the range of
    // a double reads as Infinity, which is refused.
    v.metadata({ type: 'number', ...FINITE }),
  );
}

export function laxInt() {
  return v.pipe(
    v.unknown(),
    v.rawTransform<unknown, number>(({ dataset, addIssue, NEVER }) => {
      const x = dataset.value;
      if (typeof x === 'number' && Number.isFinite(x)) {
        if (Number.isSafeInteger(x)) return x;
        if (Number.isInteger(x)) {
          addIssue({
            message: msg(
              'int_parsing',
              `Input should be a valid integer between ${Number.MIN_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`,
            ),
          });
          return NEVER;
        }
        addIssue({ message: msg('int_from_float', 'Input should be a valid integer, got a number with a fractional part') });
        return NEVER;
      }
      if (typeof x === 'string' && /^\s*[+-]?\d+\s*$/.test(x) && Number.isSafeInteger(Number(x))) return Number(x);
      addIssue({
        message: msg(
          typeof x === 'string' ? 'int_parsing' : 'int_type',
          typeof x === 'string'
            ? 'Input should be a valid integer, unable to parse string as an integer'
            : 'Input should be a valid integer',
        ),
      });
      return NEVER;
    }),
    // JavaScript numbers hold integers exactly up to 2^53 - 1: larger ones are refused.
    v.metadata({ type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }),
  );
}

/**
 * A JSON boolean and nothing else: unlike numbers, a flag given as 0, 1 or "true" is refused (422
 * bool_type), as the spec types these fields boolean and a wrong guess at an ambiguous value could
 * make a private file public.
 */
export function jsonBool() {
  return v.boolean(msg('bool_type', 'Input should be a valid boolean'));
}

export const gt = (n: number) => v.gtValue<number, number, string>(n, msg('greater_than', `Input should be greater than ${n}`));
export const ge = (n: number) =>
  v.minValue<number, number, string>(n, msg('greater_than_equal', `Input should be greater than or equal to ${n}`));
export const le = (n: number) =>
  v.maxValue<number, number, string>(n, msg('less_than_equal', `Input should be less than or equal to ${n}`));
export const str = () => v.string(msg('string_type', 'Input should be a valid string'));
export const maxChars = (n: number) =>
  v.maxLength<string, number, string>(n, msg('string_too_long', `String should have at most ${n} characters`));
