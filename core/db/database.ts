// Opens the database with either driver behind one drizzle type, and applies migrations.
import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import * as schema from './schema.ts';
import { acquireFolderLock } from './folder-lock.ts';
import { applyMigrations } from './migrate.ts';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  driver: 'postgres' | 'pglite';
  close(): Promise<void>;
}

/**
 * `postgres://...` uses PostgreSQL; `pglite:<folder>` an embedded database in that folder;
 * `pglite:memory` an in-memory one (tests).
 */
export async function openDatabase(url: string): Promise<Database> {
  const database = url.startsWith('pglite:') ? await openPglite(url.slice('pglite:'.length)) : openPostgres(url);
  try {
    await applyMigrations(database.db);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

function openPostgres(url: string): Database {
  // onnotice: migrations' "already exists" notices are noise.
  const client = postgres(url, { max: 10, onnotice: () => {} });
  return {
    db: drizzlePostgres(client, { schema }) as unknown as Db,
    driver: 'postgres',
    close: () => client.end({ timeout: 5 }),
  };
}

async function openPglite(folder: string): Promise<Database> {
  if (folder === 'memory') {
    const client = await PGlite.create();
    return { db: drizzlePglite(client, { schema }) as unknown as Db, driver: 'pglite', close: () => client.close() };
  }
  await mkdir(folder, { recursive: true });
  // PGlite has no cross-process lock; a second process opening the folder would corrupt it.
  const lock = await acquireFolderLock(folder);
  try {
    const client = await PGlite.create(folder);
    return {
      db: drizzlePglite(client, { schema }) as unknown as Db,
      driver: 'pglite',
      close: async () => {
        await client.close();
        await lock.release();
      },
    };
  } catch (err) {
    await lock.release();
    throw err;
  }
}
