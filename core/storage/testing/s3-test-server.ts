// A real S3 server for tests (versitygw, which checks SigV4 signatures). Uses FFOP_TEST_S3_ENDPOINT
// (+ _REGION, _ACCESS_KEY, _SECRET_KEY) when set (scripts/test.sh starts one for the whole run);
// otherwise starts versitygw through scripts/versitygw.sh and stops it afterwards if it started it.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from 'minio';

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
  const alreadyRunning = await run('bash', [SCRIPT, 'status']).then(
    () => true,
    () => false,
  );
  // The first start builds versitygw (Go module download + compile): allow it time.
  const { stdout } = await run('bash', [SCRIPT, 'start'], { timeout: 20 * 60_000 });
  const env: Record<string, string> = {};
  for (const match of stdout.matchAll(/^export (\w+)=(.*)$/gm)) env[match[1]] = match[2];
  return {
    settings: settingsFrom(env),
    stop: async () => {
      if (!alreadyRunning) await run('bash', [SCRIPT, 'stop']);
    },
  };
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
