// A real S3 server for tests (versitygw, which checks SigV4 signatures). Uses FFOP_TEST_S3_ENDPOINT
// (+ _REGION, _ACCESS_KEY, _SECRET_KEY) when set (scripts/test.sh starts one for the whole run);
// otherwise starts a versitygw of its own through scripts/versitygw.sh and stops it afterwards.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from 'minio';
import { freePort } from '../../net/testing/free-port.ts';

const SCRIPT = fileURLToPath(new URL('../../../scripts/versitygw.sh', import.meta.url));
const run = promisify(execFile);

export interface S3Settings {
  endpoint: string;
  region: string;
  accessKey: string;
  secretKey: string;
}

export interface S3Server {
  settings: S3Settings;
  stop(): Promise<void>;
}

function settingsFrom(env: Record<string, string | undefined>): S3Settings {
  const get = (name: string) => {
    const value = env[`FFOP_TEST_S3_${name}`];
    if (!value) throw new Error(`FFOP_TEST_S3_${name} is not set`);
    return value;
  };
  return {
    endpoint: get('ENDPOINT'),
    region: env.FFOP_TEST_S3_REGION || 'us-east-1',
    accessKey: get('ACCESS_KEY'),
    secretKey: get('SECRET_KEY'),
  };
}

export async function startS3Server(): Promise<S3Server> {
  if (process.env.FFOP_TEST_S3_ENDPOINT) return { settings: settingsFrom(process.env), stop: async () => {} };
  // A server of its own (port and folder), so that test files run side by side never share one: a
  // shared one would be restarted with new keys by the next file's start, or stopped by the first to end.
  const own = { ...process.env, FFOP_S3_PORT: String(await freePort()), FFOP_S3_DIR: await mkdtemp(join(tmpdir(), 'ffop-versitygw-')) };
  // The first start builds versitygw (Go module download + compile): allow it time.
  const { stdout } = await run('bash', [SCRIPT, 'start'], { timeout: 20 * 60_000, env: own });
  const env: Record<string, string> = {};
  for (const match of stdout.matchAll(/^export (\w+)=(.*)$/gm)) env[match[1]] = match[2];
  return { settings: settingsFrom(env), stop: () => run('bash', [SCRIPT, 'stop'], { env: own }).then(() => {}) };
}

export function adminClient(s: S3Settings): Client {
  const url = new URL(s.endpoint);
  return new Client({
    endPoint: url.hostname,
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    useSSL: url.protocol === 'https:',
    region: s.region,
    accessKey: s.accessKey,
    secretKey: s.secretKey,
    pathStyle: true,
  });
}
