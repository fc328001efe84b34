// A PostgreSQL server of a test's own (its own data folder under a temporary folder, its own port on
// 127.0.0.1), which the test may stop and start again: the shared test server must never be stopped.
// PostgreSQL refuses to run as root; as root it runs as the 'postgres' system user (as scripts/postgres.sh).
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './harness.ts';

const run = promisify(execFile);

export interface OwnPostgres {
  url: string;
  /** Stops the server: 'fast' ends its connections cleanly, 'immediate' as a crash would. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same folder and port. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  destroy(): Promise<void>;
}

/** The newest installed major version's bin folder, or null when PostgreSQL is not installed. */
export async function postgresBin(): Promise<string | null> {
  const versions = await readdir('/usr/lib/postgresql').catch(() => [] as string[]);
  const newest = versions
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(a) - Number(b))
    .at(-1);
  return newest ? `/usr/lib/postgresql/${newest}/bin` : null;
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = await postgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed (scripts/ensure-system-deps.sh installs it)');
  const asRoot = process.getuid?.() === 0;
  const asOwner = (cmd: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : run(join(bin, cmd), args);
  const root = await mkdtemp(join(tmpdir(), 'ffop-own-pg-'));
  await chmod(root, 0o755); // the postgres user reaches its folder inside
  const dir = join(root, 'data');
  await mkdir(dir, { mode: 0o700 });
  if (asRoot) await run('chown', ['postgres:postgres', dir]);
  await asOwner('initdb', ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  const port = await freePort();
  const start = async () => {
    await asOwner('pg_ctl', [
      '-D',
      dir,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir}`,
      'start',
    ]);
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    await asOwner('pg_ctl', ['-D', dir, '-m', mode, '-w', '-t', '60', 'stop']);
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop,
    start,
    destroy: async () => {
      await stop('immediate').catch(() => {}); // already stopped: nothing to do
      await rm(root, { recursive: true, force: true });
    },
  };
}
