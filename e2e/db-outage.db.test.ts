// Clean degradation when the database goes away (PostgreSQL only: PGlite runs inside the process).
// The service runs in embedded mode on a PostgreSQL server of the test's own, which is stopped (as a crash would) while
// a command runs and another waits: /v1 answers 503 with Retry-After instead of hanging, /readyz says
// not ready, /healthz stays up, the log says so once; once the server is back everything works again
// and every accepted command ends.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { testDatabaseKind } from '../core/db/testing/test-database.ts';
import { startService } from './harness.ts';
import { startOwnPostgres } from './own-postgres.ts';

/** As long as a client waits for any answer: an answer must come, never a hang. */
const CLIENT_TIMEOUT_MS = 30_000;

const skip =
  testDatabaseKind() === 'postgres'
    ? false
    : 'needs PostgreSQL (FFOP_TEST_DATABASE_URL=postgres://...): PGlite cannot be stopped apart from the service';

async function call(base: string, key: string | null, method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { ...(key ? { 'x-api-key': key } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: text ? JSON.parse(text) : null };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A command that runs about `seconds` in real time (ffmpeg's -re over a generated source). */
const longCommand = (seconds: number, name: string) => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=size=64x64:rate=10:duration=${seconds} -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: name },
  vcpu_count: 1,
});

test(
  'the database stopped: /v1 answers 503 with Retry-After, /readyz not ready, /healthz up; started again: all works and no command is lost',
  { skip },
  async () => {
    const pg = await startOwnPostgres();
    const logLines: string[] = [];
    const svc = await startService({ env: { FFOP_DATABASE_URL: pg.url, FFOP_LOCAL_MAX_VCPUS: '1' }, logLines });
    try {
      const api = svc.client();
      const workDir = join(svc.dataDir, 'work');
      // One command runs (it ends while the database is away), another waits behind it.
      const running = await api.submit(longCommand(4, 'running.mp4'));
      const queued = await api.submit(longCommand(1, 'queued.mp4'));
      await until(
        'the first command runs ffmpeg',
        async () => (await api.get(`/v1/commands/${running}`)).body.processing_stage === 'FFMPEG_PROCESSING',
      );

      const logFrom = logLines.length;
      await pg.stop('immediate'); // as a crash would: connections cut, recovery at the next start
      await until('/readyz says not ready', async () => (await call(svc.url, null, 'GET', '/readyz')).status === 503);
      const ready = await call(svc.url, null, 'GET', '/readyz');
      assert.deepEqual([ready.status, ready.body], [503, { status: 'not ready' }]);
      assert.deepEqual([(await call(svc.url, null, 'GET', '/healthz')).status], [200]);
      for (const [method, path, body] of [
        ['POST', '/v1/run-ffmpeg-command', longCommand(1, 'refused.mp4')],
        ['GET', `/v1/commands/${running}`, undefined],
        ['GET', '/v1/commands', undefined],
        ['POST', '/v1/files/store-file', { file_url: 'http://127.0.0.1:9/x.mp4' }],
      ] as const) {
        const res = await call(svc.url, svc.key, method, path, body);
        assert.equal(res.status, 503, `${method} ${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.retryAfter, '5', `${method} ${path}`);
        assert.match(res.body.detail, /cannot reach its database/, `${method} ${path}`);
      }
      // The running command's runner ends (its step folder goes) while the database is away.
      await until('the running step ends', async () => (await readdir(workDir)).every((name) => !name.startsWith('step-')));

      await pg.start();
      await until('/readyz says ready', async () => (await call(svc.url, null, 'GET', '/readyz')).status === 200);
      const after = await api.submit(longCommand(1, 'after.mp4'));
      for (const id of [running, queued, after]) {
        const { record } = await api.waitForEnd(id, 120_000);
        assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
      }

      // The outage is in the log once, and its end: no line per request or per background pass.
      const outageLog = logLines.slice(logFrom).map((line) => JSON.parse(line) as { level: number; msg: string });
      // (A step whose result came while the database was away runs again: that is worth its warning.)
      const loud = outageLog.filter((l) => l.level >= 40 && l.msg !== 'step lost, running it again');
      assert.deepEqual(
        loud.map((l) => l.msg),
        ['the database cannot be reached: /v1 answers 503 and background work waits until it is back'],
        JSON.stringify(loud),
      );
      assert.ok(outageLog.some((l) => l.msg === 'the database can be reached again'));
    } finally {
      await svc.close();
      await pg.destroy();
    }
  },
);
