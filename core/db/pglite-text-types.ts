// drizzle passes the same parsers with every PGlite query: dates, timestamps and intervals (and arrays
// of them, and of numerics) come back as the text PostgreSQL sent, for drizzle's columns to map. Given
// per query, PGlite first copies its whole table of about 320 type parsers into a new object: about
// 70 µs per statement, as much as running `select 1`. Here the instance's own table reads those types
// as text, set once, and a query that asks no more than that goes without per-query parsers: the same
// rows for less work.
import { types, type PGlite } from '@electric-sql/pglite';

/** The types drizzle-orm/pglite reads as text (its session's queryConfig and rawQueryConfig). */
export const TEXT_TYPES: readonly number[] = [
  types.TIMESTAMP,
  types.TIMESTAMPTZ,
  types.INTERVAL,
  types.DATE,
  1231, // numeric[]
  1115, // timestamp[]
  1185, // timestamptz[]
  1187, // interval[]
  1182, // date[]
];

const asText = (value: string): string => value;

/**
 * Makes `client` read TEXT_TYPES as text, and drops a query's `parsers` when they are for those types
 * only. Only drizzle queries this client, and it reads them as text anyway; the instance's other
 * parsers are unchanged. Call before takeTurnsWithRequests wraps `client.query`.
 */
export function readTypesAsText(client: PGlite): void {
  for (const oid of TEXT_TYPES) client.parsers[oid] = asText;
  const query = client.query.bind(client);
  client.query = ((text: string, params?: unknown[], options?: Parameters<PGlite['query']>[2]) => {
    if (options?.parsers === undefined || !Object.keys(options.parsers).every((oid) => TEXT_TYPES.includes(Number(oid)))) {
      return query(text, params, options);
    }
    const { parsers: _sameAsTheInstance, ...rest } = options;
    return query(text, params, rest);
  }) as PGlite['query'];
}
