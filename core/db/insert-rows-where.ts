// An INSERT whose rows travel as one JSON parameter: `insert into <table> (<columns>) select <columns>
// from the rows as JSON where <condition>`. A condition in the same statement decides whether they are
// stored (a running step, a quota with room), where INSERT ... VALUES cannot have one.
import { getTableColumns, getTableName, sql, type SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';

/**
 * The columns are those the rows give (a column one row gives is null in the others); the rest keep
 * their defaults. Values go as JSON: dates as ISO strings, JSON columns as they are. Returns the
 * statement and the column names it sets.
 */
export function insertRowsWhere(table: PgTable, rows: Record<string, unknown>[], condition: SQL): { statement: SQL; names: string[] } {
  const columns = getTableColumns(table);
  const keys = Object.keys(columns).filter((key) => rows.some((row) => row[key] !== undefined));
  const names = keys.map((key) => columns[key].name);
  const json = JSON.stringify(rows.map((row) => Object.fromEntries(keys.map((key, i) => [names[i], row[key] ?? null]))));
  const list = sql.join(
    names.map((name) => sql.identifier(name)),
    sql`, `,
  );
  const statement = sql`insert into ${sql.identifier(getTableName(table))} (${list})
    select ${list} from jsonb_populate_recordset(null::${sql.identifier(getTableName(table))}, ${json}::jsonb) where ${condition}`;
  return { statement, names };
}
