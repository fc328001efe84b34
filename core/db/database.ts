// Opens the database with either driver behind one drizzle type, and applies migrations.
import { execFile } from 'node:child_process';
import { access, mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { takeTurnsWithRequests } from './pglite-fairness.ts';
import { cacheStatements } from './pglite-statement-cache.ts';
import { readTypesAsText } from './pglite-text-types.ts';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import postgres from 'postgres';
import * as schema from './schema.ts';
import { acquireFolderLock } from './folder-lock.ts';
import { applyMigrations } from './migrate.ts';
import { PGLITE_OPTIONS } from './pglite-options.ts';
import { mainPoolSize, outageOptions } from './postgres-pool.ts';
import { DatabaseHealth } from './database-health.ts';
import type { Logger } from 'pino';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  /**
   * The same database for the poll path's reads, which someone waits on: they do not queue behind a
   * burst's writes (PostgreSQL: a small pool of its own; PGlite: the lane of its queue that goes first).
   */
  pollReads: Db;
  driver: 'postgres' | 'pglite';
  /**
   * Calls `onNotify` with the payload of each notification on `channel` (sent by any process, after
   * its commit), and `onResync` whenever some may have been missed: the listening connection was
   * (re)established. Resolves to a function that stops listening.
   */
  listen(channel: string, onNotify: (payload: string) => void, onResync: () => void): Promise<() => Promise<void>>;
  /** Whether the database can be reached right now (PGlite: always); see database-health.ts. */
  health: DatabaseHealth;
  close(): Promise<void>;
}

/**
 * `postgres://...` uses PostgreSQL; `pglite:<folder>` an embedded database in that folder;
 * `pglite:memory` an in-memory one (tests).
 */
export async function openDatabase(url: string, o: { logger?: Logger } = {}): Promise<Database> {
  const database = url.startsWith('pglite:') ? await openPglite(url.slice('pglite:'.length)) : openPostgres(url, o.logger);
  try {
    await applyMigrations(database.db);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

function openPostgres(url: string, logger?: Logger): Database {
  // onnotice: migrations' "already exists" notices are noise.
  const options = { ...outageOptions(url), onnotice: () => {} };
  const client = postgres(url, { ...options, max: mainPoolSize(url, availableParallelism()) });
  const readers = postgres(url, { ...options, max: 2 });
  // The health check has a connection of its own: it must not queue behind a burst's statements.
  const checker = postgres(url, { ...options, max: 1 });
  const health = new DatabaseHealth({ check: () => checker`select 1`, logger });
  health.start();
  return {
    db: drizzlePostgres(client, { schema }),
    pollReads: drizzlePostgres(readers, { schema }),
    driver: 'postgres',
    listen: async (channel, onNotify, onResync) => {
      const subscription = await client.listen(channel, onNotify, onResync);
      return () => subscription.unlisten();
    },
    health,
    close: async () => {
      health.stop();
      await Promise.all([client.end({ timeout: 5 }), readers.end({ timeout: 5 }), checker.end({ timeout: 5 })]);
    },
  };
}

async function openPglite(folder: string): Promise<Database> {
  if (folder === 'memory') {
    const client = await PGlite.create(PGLITE_OPTIONS);
    return pgliteDatabase(client, () => client.close());
  }
  await mkdir(folder, { recursive: true });
  // PGlite has no cross-process lock; a second process opening the folder would corrupt it.
  const lock = await acquireFolderLock(folder);
  try {
    if (!(await exists(join(folder, 'PG_VERSION')))) await initPgliteFolder(folder);
    const client = await PGlite.create(folder, PGLITE_OPTIONS);
    return pgliteDatabase(client, async () => {
      await client.close();
      await lock.release();
    });
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/**
 * An open PGlite as a Database: statements prepared once, drizzle's text types set once, and polls'
 * reads in the lane that goes first.
 */
function pgliteDatabase(client: PGlite, close: () => Promise<void>): Database {
  // Innermost first: takeTurnsWithRequests queues what the others run.
  cacheStatements(client);
  readTypesAsText(client);
  const ahead = takeTurnsWithRequests(client);
  return {
    db: drizzlePglite(client, { schema }),
    pollReads: drizzlePglite(ahead, { schema }),
    driver: 'pglite',
    listen: pgliteListen(client),
    health: new DatabaseHealth({ check: null }),
    close,
  };
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** A new data folder is made by a process of its own, so that initdb's memory leaves with it. */
async function initPgliteFolder(folder: string): Promise<void> {
  // Compiled code runs the compiled script; the sources run through tsx, as this process does.
  const script = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './pglite-init.ts' : './pglite-init.js', import.meta.url));
  try {
    await promisify(execFile)(process.execPath, [...moduleLoaderArgs(process.execArgv), script, folder]);
  } catch (err) {
    throw new Error(
      `could not create the embedded database in ${folder}: ${(err as { stderr?: string }).stderr?.trim() || (err as Error).message}`,
    );
  }
}

/** Only the flags that load modules (tsx's loader): not, say, an inspector port or a profiler. */
export function moduleLoaderArgs(execArgv: string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const flag = execArgv[i];
    if (/^--(import|require|loader|experimental-loader)=/.test(flag)) kept.push(flag);
    else if (/^(--import|--require|-r|--loader|--experimental-loader)$/.test(flag) && i + 1 < execArgv.length)
      kept.push(flag, execArgv[++i]);
  }
  return kept;
}

/** PGlite is one connection inside this process: nothing is missed, so no resync beyond the first. */
function pgliteListen(client: PGlite): Database['listen'] {
  return async (channel, onNotify, onResync) => {
    const unlisten = await client.listen(channel, onNotify);
    onResync();
    return () => unlisten();
  };
}
