// Applies drizzle-kit's SQL migrations in order. drizzle's own migrate() takes no lock, so two
// processes starting together would collide; here every run holds a transaction-scoped advisory lock.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import type { Db } from './database.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
const LOCK_KEY = 7_042_001; // arbitrary, constant: identifies "ffmpeg-operator migrations"

interface Journal {
  entries: { idx: number; tag: string }[];
}

export async function applyMigrations(db: Db): Promise<string[]> {
  const journal = JSON.parse(await readFile(MIGRATIONS_DIR + 'meta/_journal.json', 'utf8')) as Journal;
  const entries = [...journal.entries].sort((a, b) => a.idx - b.idx);
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    // A migration may take longer than the pools' statement timeout (postgres-pool.ts), and so may the wait for the lock.
    await tx.execute(sql`set local statement_timeout = 0`);
    await tx.execute(sql`select pg_advisory_xact_lock(${LOCK_KEY})`);
    await tx.execute(sql`create table if not exists ffop_migrations (tag text primary key, applied_at timestamptz not null default now())`);
    const done = await tx.execute(sql`select tag from ffop_migrations`);
    const doneTags = new Set(rowsOf<{ tag: string }>(done).map((r) => r.tag));
    for (const entry of entries) {
      if (doneTags.has(entry.tag)) continue;
      const text = await readFile(MIGRATIONS_DIR + entry.tag + '.sql', 'utf8');
      for (const statement of text.split('--> statement-breakpoint')) {
        if (statement.trim()) await tx.execute(sql.raw(statement));
      }
      await tx.execute(sql`insert into ffop_migrations (tag) values (${entry.tag})`);
      applied.push(entry.tag);
    }
  });
  return applied;
}

/** postgres.js returns an array of rows, PGlite an object with `rows`. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return (result as { rows?: T[] }).rows ?? [];
}
