// Fair shares in queue queries: what a worker has in flight per key (an account id, or a finer key)
// as rows (key, n), so that a query can count those attempts as turns already taken.
import { sql } from 'drizzle-orm';

export function inFlightRows(counts: ReadonlyMap<string, number>) {
  if (counts.size === 0) return sql`select null::text as key, 0 as n where false`;
  const rows = [...counts].map(([key, n]) => sql`(${key}::text, ${n}::int)`);
  return sql`select * from (values ${sql.join(rows, sql`, `)}) as v(key, n)`;
}
