// Benchmark: 1,000 open event streams (GET /v1/commands/{id}/events) on the embedded service.
//   memory   the service's resident memory before the streams and with 1,000 open (each has had its
//            first event), per stream;
//   delay    from a change of a command's state, committed to the database, to its event at each of
//            the command's 100 streams: p50 and p99 over every stream of 20 changes.
// The service runs from the sources (tsx) as its own process on PostgreSQL, which the bench also
// writes the changes to (queue_reason of a QUEUED command, a field of the state events), so that the
// delay is the notification's path alone: notification, one read through the poll cache, fan-out to
// 100 streams, the client's parse. FFOP_TEST_DATABASE_URL=postgres://... names the server; without it
// the project's test PostgreSQL is started (scripts/postgres.sh).
// Run: npm run bench:events
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { ApiClient, startServiceProcess, type ServiceProcess } from '../harness.ts';
import { openEventStream, type OpenedStream, type StreamEvent } from '../event-stream-client.ts';
import { procStatusKiB, quantile } from './stats.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const COMMANDS = 10;
const PER_COMMAND = 100;
const CHANGES = 20;

if (!process.env.FFOP_TEST_DATABASE_URL?.startsWith('postgres')) {
  process.env.FFOP_TEST_DATABASE_URL = (await run('bash', ['scripts/postgres.sh', 'start'], { cwd: ROOT })).stdout.trim();
}

/** A plan whose limits do not bind, for the default account (through the service's admin socket). */
async function unlimitedPlan(svc: ServiceProcess): Promise<void> {
  const cli = (args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'api/cli/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...svc.env } });
  await cli([
    'plans',
    'create',
    'bench-events',
    '--max-vcpus',
    '64',
    '--max-run-seconds',
    '3600',
    '--requests-per-minute',
    '100000000',
    '--storage-quota-gb',
    '1000',
    '--processing-quota-gb',
    '1000',
    '--private-files',
    'no',
  ]);
  await cli(['accounts', 'set-plan', 'default', 'bench-events']);
}

const rssKiB = async (pid: number) => (await procStatusKiB(pid, 'VmRSS'))[0];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// One vCPU and a command that runs for minutes: the commands the streams watch stay QUEUED.
const svc = await startServiceProcess({
  compiled: false,
  env: { FFOP_LOCAL_MAX_VCPUS: '1', FFOP_MAX_EVENT_STREAMS_PER_KEY: '2000', FFOP_MAX_EVENT_STREAMS: '2000' },
});
const sql = postgres(svc.env.FFOP_DATABASE_URL, { max: 1, onnotice: () => {} });
const streams: OpenedStream[] = [];
try {
  await unlimitedPlan(svc);
  const api = new ApiClient(svc.url, svc.key);
  const blocker = await api.submit({
    ffmpeg_command: '-re -f lavfi -i testsrc=size=64x48:rate=5 -t 600 -c:v libx264 -preset ultrafast {{out_1}}',
    output_files: { out_1: 'o.mp4' },
    vcpu_count: 1,
  });
  const cheap = { ffmpeg_command: '-f lavfi -i testsrc=d=1:s=160x120 {{out_1}}', output_files: { out_1: 'o.mp4' }, vcpu_count: 1 };
  const ids = [];
  for (let i = 0; i < COMMANDS; i += 1) ids.push(await api.submit(cheap));
  // Warm: one stream opened and closed, so that the route's code is loaded before the baseline.
  const warm = await openEventStream(svc.url, svc.key, ids[0]);
  await warm.next();
  warm.close();
  await sleep(2_000);
  const before = await rssKiB(svc.pid);

  const arrivals = new Map<string, { stream: OpenedStream; events: StreamEvent[] }[]>();
  for (const id of ids) {
    const mine = [];
    for (let i = 0; i < PER_COMMAND; i += 1) {
      const s = await openEventStream(svc.url, svc.key, id);
      if (s.status !== 200) throw new Error(`stream ${streams.length} answered ${s.status}: ${JSON.stringify(s.body)}`);
      streams.push(s);
      mine.push({ stream: s, events: s.events });
    }
    arrivals.set(id, mine);
  }
  for (const s of streams) await s.next(60_000);
  await sleep(2_000);
  const after = await rssKiB(svc.pid);

  const delays: number[] = [];
  for (let change = 0; change < CHANGES; change += 1) {
    const id = ids[change % COMMANDS];
    const watchers = arrivals.get(id)!;
    const counts = watchers.map((w) => w.events.length);
    const t0 = performance.now();
    await sql`update commands set queue_reason = ${`bench change ${change}`} where id = ${id} and status = 'QUEUED'`;
    for (const [i, w] of watchers.entries()) {
      const e = await w.stream.next(30_000);
      if (e === null || w.events.length !== counts[i] + 1) throw new Error('a stream missed the change');
      if (!e.data.includes(`bench change ${change}`)) throw new Error(`unexpected event ${e.data}`);
      delays.push(e.at - t0);
    }
  }
  const opened = streams.length;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  console.log(`# ${opened} event streams on the embedded service (sources through tsx, PostgreSQL)`);
  console.log('| figure | value |');
  console.log('|---|---|');
  console.log(`| service RSS before the streams | ${(before / 1024).toFixed(1)} MiB |`);
  console.log(`| service RSS with ${opened} streams open | ${(after / 1024).toFixed(1)} MiB |`);
  console.log(`| memory added per stream | ${((after - before) / opened).toFixed(1)} KiB |`);
  console.log(
    `| change committed -> event, p50 (${delays.length} events, ${CHANGES} changes x ${PER_COMMAND} streams) | ${ms(quantile(delays, 0.5))} |`,
  );
  console.log(`| change committed -> event, p99 | ${ms(quantile(delays, 0.99))} |`);
  console.log(`| change committed -> event, max | ${ms(Math.max(...delays))} |`);
  await api.post(`/v1/commands/${blocker}/cancel`, undefined);
} finally {
  for (const s of streams) s.close();
  await sql.end();
  await svc.close();
}
