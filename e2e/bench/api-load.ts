// Benchmark: the API under load, side by side with its baseline in the same run.
//   poll     GET /v1/commands/{id} with a valid key, wrk on loopback at 8 and 32 connections, against
//            the thinnest Hono route on @hono/node-server answering the same JSON (bare-hono-server.ts).
//            Only 200 answers count; the account is on a plan whose rate limit does not bind.
//   burst    1,000 cheap commands submitted by 20 concurrent clients, with 4 clients polling meanwhile
//            (node:http on keep-alive connections, keep-alive-client.ts):
//            submits per second, submit and poll latency.
//   memory   the service's resident memory idle, and while those 1,000 commands wait.
//   list     GET /v1/commands?limit=100 over 100 ended commands (a client watching a batch), wrk at 8
//            connections, against the same bare route answering the same list; on a service of its own.
// The service runs as `npm start` runs it (compiled, own process), on PGlite, or on PostgreSQL when
// FFOP_TEST_DATABASE_URL=postgres://... is set. Needs wrk (Debian's `wrk`, installed when missing).
// Run: npm run bench:api -- [seconds per wrk run = 8]
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ApiClient, freePort, startServiceProcess } from '../harness.ts';
import { procStatusKiB, quantile, reportRow } from './stats.ts';
import { KeepAliveClient, submitFromClients } from './keep-alive-client.ts';
import { unlimitedPlan } from './unlimited-plan.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const seconds = Number(process.argv[2] ?? 8);
const database = process.env.FFOP_TEST_DATABASE_URL?.startsWith('postgres') ? 'PostgreSQL' : 'PGlite';
const CHEAP = { ffmpeg_command: '-f lavfi -i testsrc=d=1:s=160x120 {{out_1}}', output_files: { out_1: 'o.mp4' }, vcpu_count: 1 };

interface WrkResult {
  ok200PerSecond: number;
  p50: string;
  p99: string;
  non2xx: number;
}

/** wrk's own figures: requests (minus non-2xx answers) per second, and latency percentiles. */
async function wrk(url: string, connections: number, key: string): Promise<WrkResult> {
  const { stdout } = await run('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '--latency', '-H', `x-api-key: ${key}`, url]);
  const m = /(\d+) requests in ([\d.]+)(m?s)/.exec(stdout);
  if (!m) throw new Error(`unexpected wrk output: ${stdout}`);
  const requests = Number(m[1]);
  const duration = Number(m[2]) * (m[3] === 'ms' ? 0.001 : 1);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
  const pct = (p: string) => new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm').exec(stdout)?.[1] ?? '?';
  return { ok200PerSecond: (requests - non2xx) / duration, p50: pct('50'), p99: pct('99'), non2xx };
}

function rssMiB(pid: number): Promise<number> {
  return procStatusKiB(pid, 'VmRSS').then(([kib]) => kib / 1024);
}

async function bareHono(body: unknown, route?: string): Promise<{ url: string; close(): void }> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-hono-'));
  await writeFile(join(dir, 'body.json'), JSON.stringify(body));
  const port = await freePort();
  const args = ['--import', 'tsx', 'e2e/bench/bare-hono-server.ts', String(port), join(dir, 'body.json'), ...(route ? [route] : [])];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      child.kill();
      void rm(dir, { recursive: true, force: true });
    },
  };
}

/** One line of a wrk table: the service's figures, the bare route's, and their ratio. */
function wrkTableLine(label: string, service: WrkResult, baseline: WrkResult): string {
  return (
    `| ${label} | ${service.ok200PerSecond.toFixed(0)} | ${service.p50} | ${service.p99} ` +
    `| ${baseline.ok200PerSecond.toFixed(0)} | ${baseline.p50} | ${baseline.p99} ` +
    `| ${(service.ok200PerSecond / baseline.ok200PerSecond).toFixed(2)}x |`
  );
}

/** The performance table's row for a wrk comparison. */
function wrkRow(what: string, service: WrkResult, baseline: WrkResult, bareLabel: string, goal: string): Parameters<typeof reportRow>[0] {
  return {
    what,
    service: `${service.ok200PerSecond.toFixed(0)} req/s, p50 ${service.p50}, p99 ${service.p99}`,
    baseline: `${baseline.ok200PerSecond.toFixed(0)} req/s, p99 ${baseline.p99} (${bareLabel})`,
    ratio: `${(service.ok200PerSecond / baseline.ok200PerSecond).toFixed(2)}x`,
    goal,
  };
}

/**
 * The list as a client watching a batch polls it: 100 commands, all ended, on a service of its own (so
 * that its answers' memory is not in the memory row).
 */
async function listRow(): Promise<Parameters<typeof reportRow>[0]> {
  const svc = await startServiceProcess({ compiled: true });
  try {
    await unlimitedPlan(svc);
    const api = new ApiClient(svc.url, svc.key);
    const ids = await Promise.all(Array.from({ length: 100 }, () => api.submit(CHEAP)));
    for (const id of ids) await api.waitForEnd(id, 120_000);
    const listPath = '/v1/commands?limit=100';
    const bare = await bareHono((await api.get(listPath)).body, '/v1/commands');
    try {
      const service = await wrk(`${svc.url}${listPath}`, 8, svc.key);
      const baseline = await wrk(`${bare.url}${listPath}`, 8, svc.key);
      if (service.non2xx) console.log(`# ${service.non2xx} answers were not 200 and are not counted`);
      console.log('');
      console.log(`| list GET ${listPath}, 100 ended | service 200/s | p50 | p99 | bare Hono 200/s | p50 | p99 | ratio |`);
      console.log('|---|---|---|---|---|---|---|---|');
      console.log(wrkTableLine('8 connections', service, baseline));
      // No goal: no issue has set one yet.
      return wrkRow(
        `GET ${listPath} over 100 ended commands, wrk at 8 connections (${database})`,
        service,
        baseline,
        'bare Hono, the same list',
        '-',
      );
    } finally {
      bare.close();
    }
  } finally {
    await svc.close();
  }
}

// wrk comes from Debian's packages, installed once by the project's script.
await run('bash', [join(ROOT, 'scripts/ensure-system-deps.sh')], {
  env: { ...process.env, FFOP_NEED_BENCH: '1' },
});
const svc = await startServiceProcess({ compiled: true });
try {
  await unlimitedPlan(svc);
  const api = new ApiClient(svc.url, svc.key);
  const id = await api.submit(CHEAP);
  const { record } = await api.waitForEnd(id, 60_000);
  const idleRss = await rssMiB(svc.pid);

  console.log(`# API load (${database}, compiled service, wrk ${seconds} s per run)`);
  const bare = await bareHono(record);
  const pollRows: Parameters<typeof reportRow>[0][] = [];
  try {
    console.log('| poll GET /v1/commands/{id} | service 200/s | p50 | p99 | bare Hono 200/s | p50 | p99 | ratio |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const connections of [8, 32]) {
      const service = await wrk(`${svc.url}/v1/commands/${id}`, connections, svc.key);
      const baseline = await wrk(`${bare.url}/v1/commands/${id}`, connections, svc.key);
      if (service.non2xx) console.log(`# ${service.non2xx} answers were not 200 and are not counted`);
      console.log(wrkTableLine(`${connections} connections`, service, baseline));
      const goal = connections === 32 ? '>= 0.5x, p99 <= 20 ms' : '>= 0.5x';
      pollRows.push(wrkRow(`GET /v1/commands/{id}, wrk at ${connections} connections (${database})`, service, baseline, 'bare Hono', goal));
    }
  } finally {
    bare.close();
  }
  for (const row of pollRows) reportRow(row);

  // 1,000 submits from 20 clients at once, 4 clients polling meanwhile (keep-alive-client.ts says why not fetch).
  const client = new KeepAliveClient(svc.url, svc.key);
  const body = JSON.stringify(CHEAP);
  const submitMs: number[] = [];
  const pollMs: number[] = [];
  const ids: string[] = [];
  let peakRss = idleRss;
  let submitting = true;
  const sampler = setInterval(
    () =>
      void rssMiB(svc.pid).then(
        (r) => (peakRss = Math.max(peakRss, r)),
        () => {},
      ),
    100,
  );
  const pollers = Array.from({ length: 4 }, async () => {
    while (submitting) {
      const target = ids[Math.floor(Math.random() * ids.length)] ?? id;
      const t0 = performance.now();
      const res = await client.request('GET', `/v1/commands/${target}`);
      if (res.status === 200) pollMs.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  const t0 = performance.now();
  const clientCpu0 = process.cpuUsage();
  await submitFromClients(client, body, { count: 1000, clients: 20, ids, submitMs });
  const burstSeconds = (performance.now() - t0) / 1000;
  const clientCpu = process.cpuUsage(clientCpu0);
  submitting = false;
  await Promise.all(pollers);
  client.close();
  const queuedRss = await rssMiB(svc.pid);
  clearInterval(sampler);
  console.log('');
  console.log('| burst: 1,000 submits from 20 clients | value |');
  console.log('|---|---|');
  console.log(`| submits per second | ${(1000 / burstSeconds).toFixed(1)} |`);
  console.log(`| submit latency p50 / p99 | ${quantile(submitMs, 0.5).toFixed(0)} ms / ${quantile(submitMs, 0.99).toFixed(0)} ms |`);
  console.log(
    `| polls meanwhile p50 / p99 (${pollMs.length} polls) ` +
      `| ${quantile(pollMs, 0.5).toFixed(0)} ms / ${quantile(pollMs, 0.99).toFixed(0)} ms |`,
  );
  console.log(
    `| the load generator's own CPU (this process) | ${((clientCpu.user + clientCpu.system) / 1e4 / burstSeconds).toFixed(0)}% of a core |`,
  );
  console.log(
    `| service RSS idle / with 1,000 waiting (peak while submitting) ` +
      `| ${idleRss.toFixed(0)} MiB / ${queuedRss.toFixed(0)} MiB (${peakRss.toFixed(0)} MiB) |`,
  );
  reportRow({
    what: `1,000 submits from 20 clients at once, polls meanwhile (${database})`,
    service:
      `${(1000 / burstSeconds).toFixed(0)} submits/s, submit p50 ${quantile(submitMs, 0.5).toFixed(0)} ms, ` +
      `p99 ${quantile(submitMs, 0.99).toFixed(0)} ms; polls p99 ${quantile(pollMs, 0.99).toFixed(0)} ms`,
    baseline: '-',
    ratio: '-',
    goal: '>= 200 submits/s, submit p99 <= 100 ms, poll p99 <= 20 ms',
  });
  reportRow({
    what: `service RSS, idle / with 1,000 commands waiting (${database})`,
    service: `${idleRss.toFixed(0)} MiB / ${queuedRss.toFixed(0)} MiB (peak ${peakRss.toFixed(0)} MiB)`,
    baseline: '-',
    ratio: '-',
    goal: '<= 200 MB (191 MiB)',
  });
} finally {
  await svc.close();
}
reportRow(await listRow());
