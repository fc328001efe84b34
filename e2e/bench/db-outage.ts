// Benchmark: the timeline of a database outage. The service runs in embedded mode (its own process,
// from the sources) on a PostgreSQL server of its own; a client sends about 3 requests a second (a
// submit, a poll of an earlier command, a /readyz; and a /healthz) while the server runs, is
// stopped for the outage, and runs again. Prints, per 5 s of the timeline, the status codes and
// latencies of each kind of request, then how long the service took to answer 200 again and whether
// every accepted command ended.
// Run: npx tsx e2e/bench/db-outage.ts [outage seconds, default 60] [--immediate]
import { ApiClient, makeClip, startMediaServer, startServiceProcess } from '../harness.ts';
import { startOwnPostgres } from '../own-postgres.ts';
import { quantile } from './stats.ts';

const outageSeconds = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 60);
const mode = process.argv.includes('--immediate') ? 'immediate' : 'fast';
const BEFORE_S = 10;
const AFTER_S = 30;
/** A client gives up on an answer after this long (the harness's own clients wait as long). */
const CLIENT_TIMEOUT_MS = 90_000;

interface Sample {
  kind: 'submit' | 'poll' | 'readyz' | 'healthz';
  sentS: number;
  ms: number;
  status: number | 'timeout' | 'error';
  retryAfter: string | null;
}

const pg = await startOwnPostgres();
const media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 1));
const svc = await startServiceProcess({ compiled: false, env: { FFOP_DATABASE_URL: pg.url, FFOP_ALLOW_ADDRESSES: media.allowEntry } });
const api = new ApiClient(svc.url, svc.key);
const samples: Sample[] = [];
const accepted: string[] = [];
const t0 = performance.now();
const nowS = () => (performance.now() - t0) / 1000;

async function timed(kind: Sample['kind'], send: (signal: AbortSignal) => Promise<Response>): Promise<Response | null> {
  const sentS = nowS();
  const started = performance.now();
  let status: Sample['status'];
  let res: Response | null = null;
  try {
    res = await send(AbortSignal.timeout(CLIENT_TIMEOUT_MS));
    await res.clone().arrayBuffer();
    status = res.status;
  } catch (err) {
    status = (err as Error).name === 'TimeoutError' ? 'timeout' : 'error';
  }
  samples.push({ kind, sentS, ms: performance.now() - started, status, retryAfter: res?.headers.get('retry-after') ?? null });
  return res;
}

const headers = { 'x-api-key': svc.key, 'content-type': 'application/json' };
const submitBody = JSON.stringify({
  ffmpeg_command: '-i {{in_1}} -t 0.2 -vf scale=64:48 {{out_1}}',
  input_files: { in_1: `${media.url}/clip.mp4` },
  output_files: { out_1: 'small.mp4' },
  vcpu_count: 1,
});

async function submit() {
  const res = await timed('submit', (signal) =>
    fetch(`${svc.url}/v1/run-ffmpeg-command`, { method: 'POST', headers, body: submitBody, signal }),
  );
  if (res?.status === 200) accepted.push(((await res.json()) as { command_id: string }).command_id);
}
async function poll() {
  const id = accepted.at(-1 - Math.floor(Math.random() * Math.min(10, accepted.length)));
  if (id) await timed('poll', (signal) => fetch(`${svc.url}/v1/commands/${id}`, { headers, signal }));
}
const probe = (path: 'readyz' | 'healthz') => timed(path, (signal) => fetch(`${svc.url}/${path}`, { signal }));

// One tick a second: each request on its own, so a slow answer does not hold back the next ones.
const inFlight: Promise<unknown>[] = [];
let ticking = true;
const ticker = (async () => {
  while (ticking) {
    inFlight.push(submit(), poll(), probe('readyz'), probe('healthz'));
    await new Promise((r) => setTimeout(r, 1000));
  }
})();
const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

await sleep(BEFORE_S);
const stoppedAt = nowS();
await pg.stop(mode);
console.log(`PostgreSQL stopped (-m ${mode}) at t=${stoppedAt.toFixed(1)} s`);
await sleep(outageSeconds);
const startedAt = nowS();
await pg.start();
console.log(`PostgreSQL started again at t=${startedAt.toFixed(1)} s (outage ${(startedAt - stoppedAt).toFixed(1)} s)`);
await sleep(AFTER_S);
ticking = false;
await ticker;
await Promise.all(inFlight);

// Every accepted command ends (polls honour 429 + Retry-After, and now the database is back).
let ended = 0;
const statuses: Record<string, number> = {};
for (const id of accepted) {
  try {
    const { record } = await api.waitForEnd(id, 300_000);
    ended++;
    statuses[record.status] = (statuses[record.status] ?? 0) + 1;
  } catch (err) {
    statuses[`lost: ${(err as Error).message.slice(0, 80)}`] = 1 + (statuses[`lost: ${(err as Error).message.slice(0, 80)}`] ?? 0);
  }
}

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms.toFixed(0)} ms`);
function line(list: Sample[]): string {
  if (list.length === 0) return '-';
  const codes: Record<string, number> = {};
  for (const s of list) {
    const key = String(s.status) + (s.status === 503 || s.status === 500 ? (s.retryAfter ? '+RA' : '') : '');
    codes[key] = (codes[key] ?? 0) + 1;
  }
  const ms = list.map((s) => s.ms);
  const slow = list.filter((s) => s.ms > 2000).length;
  return `${Object.entries(codes)
    .map(([k, n]) => `${k}x${n}`)
    .join(' ')} p50 ${fmt(quantile(ms, 0.5))} max ${fmt(Math.max(...ms))}${slow ? ` (>2s: ${slow})` : ''}`;
}
const kinds: Sample['kind'][] = ['submit', 'poll', 'readyz', 'healthz'];
console.log(
  `\nTimeline (by the time a request was sent; +RA: with Retry-After; outage from ${stoppedAt.toFixed(0)} s to ${startedAt.toFixed(0)} s):`,
);
const end = Math.max(...samples.map((s) => s.sentS));
for (let from = 0; from < end; from += 5) {
  const bucket = samples.filter((s) => s.sentS >= from && s.sentS < from + 5);
  const phase = from + 5 <= stoppedAt ? 'up  ' : from >= stoppedAt && from + 5 <= startedAt ? 'DOWN' : from >= startedAt ? 'back' : 'edge';
  console.log(
    `${String(from).padStart(4)}-${String(from + 5).padEnd(4)} ${phase}  ` +
      kinds.map((k) => `${k}: ${line(bucket.filter((s) => s.kind === k))}`).join(' | '),
  );
}
console.log('\nBy phase:');
for (const [name, test] of [
  ['outage (sent while stopped)', (s: Sample) => s.sentS >= stoppedAt && s.sentS < startedAt],
  ['after (sent once started again)', (s: Sample) => s.sentS >= startedAt],
] as const) {
  console.log(`  ${name}:`);
  for (const k of kinds) console.log(`    ${k.padEnd(8)} ${line(samples.filter((s) => s.kind === k && test(s)))}`);
}
// Recovery: from the server's start, until the first request sent after it that answered 200 and
// after which every request of that kind answered 200.
console.log('\nTime to recover (server started again -> from then on every answer 200):');
for (const k of kinds) {
  const after = samples.filter((s) => s.kind === k && s.sentS >= startedAt - 5).sort((a, b) => a.sentS - b.sentS);
  let firstOk: Sample | null = null;
  for (const s of after)
    if (s.status !== 200) firstOk = null;
    else firstOk ??= s;
  console.log(`  ${k.padEnd(8)} ${firstOk ? `${Math.max(0, firstOk.sentS + firstOk.ms / 1000 - startedAt).toFixed(1)} s` : 'never'}`);
}
console.log(`\nAccepted commands: ${accepted.length}; ended: ${ended}; ${JSON.stringify(statuses)}`);
if (svc.stderr().length) {
  const lines = svc.stderr().trim().split('\n');
  console.log(`Service log (warn and above): ${lines.length} lines; the first: ${lines[0]?.slice(0, 200)}`);
}

await svc.close();
await media.close();
await pg.destroy();
