// Each test gets its own fresh database: an in-memory PGlite, or (when FFOP_TEST_DATABASE_URL points
// at PostgreSQL) a database created for it and dropped afterwards. scripts/test.sh runs the
// database tests once each way.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openDatabase, type Database } from '../database.ts';

export function testDatabaseKind(): 'postgres' | 'pglite' {
  return process.env.FFOP_TEST_DATABASE_URL?.startsWith('postgres') ? 'postgres' : 'pglite';
}

/** Returns a database URL for openDatabase() and a function that removes it. */
export async function createTestDatabaseUrl(): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = process.env.FFOP_TEST_DATABASE_URL;
  if (!admin?.startsWith('postgres')) return { url: 'pglite:memory', drop: async () => {} };
  const name = `ffop_test_${randomBytes(6).toString('hex')}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {} });
  await sql.unsafe(`create database ${name}`);
  await sql.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const s = postgres(admin, { max: 1, onnotice: () => {} });
      await s.unsafe(`drop database if exists ${name} with (force)`);
      await s.end();
    },
  };
}

export async function openTestDatabase(): Promise<Database> {
  const { url, drop } = await createTestDatabaseUrl();
  const database = await openDatabase(url);
  return {
    ...database,
    close: async () => {
      await database.close();
      await drop();
    },
  };
}
