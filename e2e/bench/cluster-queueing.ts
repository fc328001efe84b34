// Benchmark: cluster queueing (built-in mode by default) on two real nodes of 2 CPUs each (e2e/node/installed-service.ts:
// the Helm chart on kubelet + containerd, in e2e/node/sandbox.sh). Prints markdown rows:
//   1. idle: `idle` commands submitted one at a time on an idle cluster, submit -> runner container
//      running (containerd's /tasks/start) p50/p95; the queue wait (started_at - created_at) beside it.
//   2. burst: `burst` short 1-vCPU commands submitted at once: drain time against the nodes' own
//      (the runner containers' CPU-seconds / the nodes' CPUs); the nodes' CPU busy fraction between the
//      first container start and the last container end (sum of runner containers' running intervals x
//      their CPU request / (allocatable CPUs x window)); queue wait p50/p95; capacity freed (a runner
//      container exited) -> the next runner container running; Jobs seen for commands still QUEUED.
//   3. backlog: `backlog` commands inserted QUEUED (as the API stores them, FfmpegCommand included)
//      while the nodes drain them: Jobs against QUEUED commands, sampled; capacity freed -> next
//      container running with that backlog; the leading operator's RSS idle and with the backlog.
//      The backlog is cancelled (in the database) afterwards.
// Container running intervals come from each node's containerd events (`ctr events`: exact times),
// mapped to runner pods by a pod watch (finished Jobs and their pods are deleted by the operator).
// With --kueue: Kueue (e2e/kueue/kueue.ts) runs in the sandbox and the chart is installed with
// queueing.mode kueue (a ClusterQueue of the nodes' CPUs); the idle row as above, then the backlog as
// suspended Jobs + Workloads: how long until they all exist (at most --kueue-wait-seconds; then with
// those made), the operator's RSS with them, and capacity freed -> next container running (Kueue admits,
// the operator sees the Job resumed). No burst by default.
// Run (root; builds the images, and Kueue with --kueue, outside the sandbox, then re-runs itself inside it):
//   npm run bench:queueing -- [--burst 200] [--idle 10] [--backlog 10000] [--backlog-seconds 60] [--seconds 1] [--kueue] [--kueue-wait-seconds 600]
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { BatchV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { inArray, sql } from 'drizzle-orm';
import { rowsOf } from '../../core/db/migrate.ts';
import { LABELS, LEADER_LEASE, MANAGED_BY } from '../../core/k8s/names.ts';
import { createFfmpegCommand } from '../../core/k8s/ffmpeg-command.ts';
import { CommandsRepo, type CommandRow, type NewCommandRow } from '../../core/commands/commands-repo.ts';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { commands as commandsTable } from '../../core/db/schema.ts';
import { runProcess } from '../cluster/cluster.ts';
import { startListWatch } from '../cluster/list-watch.ts';
import { quantile, reportRow } from './stats.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SELF = fileURLToPath(import.meta.url);

const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};
/** Kueue mode: Kueue started in the sandbox, the chart installed with queueing.mode kueue and a ClusterQueue of the nodes' CPUs. */
const KUEUE = argv.includes('--kueue');
const NODE_CPUS = 2;
const BURST = option('burst', KUEUE ? 0 : 200);
const IDLE = option('idle', 10);
const BACKLOG = option('backlog', 10_000);
const BACKLOG_SECONDS = option('backlog-seconds', 60);
/** ffmpeg's own run of each command, at its real rate (-re): with the runner's start, probe and upload a container runs a little longer. */
const SECONDS = option('seconds', 1);
/** Kueue mode: how long to wait for every backlog command's suspended Job and Workload before measuring with what exists. */
const KUEUE_WAIT_SECONDS = option('kueue-wait-seconds', 600);

// Outside the sandbox: build the images here (the sandbox has no network), then run inside it.
if (process.env.FFOP_NODE_SANDBOX !== '1') {
  const built = await runProcess('bash', [`${ROOT}scripts/build-images.sh`]);
  if (built.code !== 0) throw new Error(`scripts/build-images.sh failed:\n${built.stderr.split('\n').slice(-20).join('\n')}`);
  if (KUEUE) {
    const kueue = await runProcess('bash', [`${ROOT}e2e/kueue/build.sh`]);
    if (kueue.code !== 0) throw new Error(`e2e/kueue/build.sh failed:\n${kueue.stderr.split('\n').slice(-20).join('\n')}`);
  }
  const child = spawn('bash', [`${ROOT}e2e/node/sandbox.sh`, process.execPath, '--import', 'tsx', SELF, ...argv], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  process.exit(code ?? 1);
}

// Imported only inside the sandbox.
const { installOnRealNode } = await import('../node/installed-service.ts');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const command = () => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=d=${SECONDS}:s=160x120:r=10 -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: 'burst.mp4' },
  vcpu_count: 1,
});

/** A runner container as seen by containerd (exact times) and by its pod (which command, how many CPUs). */
interface RunnerContainer {
  containerId: string;
  podName: string;
  commandId: string;
  node: string;
  cpus: number;
  start?: number;
  end?: number;
}

const svc = await installOnRealNode({
  nodes: 2,
  ...(KUEUE ? { kueue: true, values: { queueing: { mode: 'kueue', kueue: { clusterQueue: { cpu: String(2 * NODE_CPUS) } } } } } : {}),
});
const children: ChildProcess[] = [];
try {
  console.log(`# stage times (s): ${JSON.stringify(svc.timings)}`);
  const ns = svc.namespace;
  const core = svc.cluster.kubeconfig.makeApiClient(CoreV1Api);
  const batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
  const crs = svc.cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const leases = svc.cluster.kubeconfig.makeApiClient(CoordinationV1Api);
  const db = svc.database.db;
  const repo = new CommandsRepo(db);
  const api = svc.client();

  const nodes = (await core.listNode()).items;
  const cpusOf = (q: string | undefined) => (q === undefined ? 0 : q.endsWith('m') ? Number(q.slice(0, -1)) / 1000 : Number(q));
  const totalCpus = nodes.reduce((sum, n) => sum + cpusOf(n.status?.allocatable?.cpu), 0);
  console.log(`# nodes: ${nodes.map((n) => `${n.metadata?.name} (${n.status?.allocatable?.cpu} CPUs allocatable)`).join(', ')}`);

  // Container start and exit times from each node's containerd.
  const taskTimes = new Map<string, { start?: number; end?: number }>();
  const unparsed: string[] = [];
  for (const node of svc.nodes) {
    const events = spawn('ctr', ['--address', svc.nodeEnvs[node].CONTAINERD_ADDRESS, 'events'], { stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(events);
    createInterface({ input: events.stdout }).on('line', (line) => {
      // "2026-11-27 21:30:00.123456789 +0000 UTC k8s.io /tasks/start {"container_id":"...","pid":1}"
      const m = /^(\S+) (\S+) ([+-]\d\d)(\d\d) \S+ k8s\.io (\/tasks\/(?:start|exit)) (\{.*\})$/.exec(line);
      if (!m) {
        if (unparsed.length < 3) unparsed.push(line);
        return;
      }
      const at = Date.parse(`${m[1]}T${m[2].slice(0, 12)}${m[3]}:${m[4]}`);
      const event = JSON.parse(m[6]) as { container_id?: string; id?: string; exited_at?: string };
      // Exits of exec'd processes carry another id than their container's.
      if (!event.container_id || (m[5] === '/tasks/exit' && event.id && event.id !== event.container_id)) return;
      const times = taskTimes.get(event.container_id) ?? {};
      if (m[5] === '/tasks/start') times.start ??= at;
      else times.end ??= at;
      taskTimes.set(event.container_id, times);
    });
  }
  // Which runner container belongs to which command, from a pod watch (pods go with their Jobs).
  const runners = new Map<string, RunnerContainer>();
  /** When the watch first showed each runner pod bound to a node, and ended (Succeeded or Failed). */
  const podTimes = new Map<string, { bound?: number; ended?: number }>();
  const seePod = (pod: V1Pod) => {
    const podName = pod.metadata?.name ?? '';
    const times = podTimes.get(podName) ?? {};
    podTimes.set(podName, times);
    if (pod.spec?.nodeName) times.bound ??= Date.now();
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') times.ended ??= Date.now();
    const commandId = pod.metadata?.labels?.[LABELS.commandId];
    const containerId = pod.status?.containerStatuses?.[0]?.containerID?.replace(/^\w+:\/\//, '');
    if (!commandId || !containerId || runners.has(containerId)) return;
    const cpus = cpusOf(pod.spec?.containers[0]?.resources?.requests?.cpu);
    runners.set(containerId, { containerId, podName, commandId, node: pod.spec?.nodeName ?? '?', cpus });
  };
  const selector = `${LABELS.managedBy}=${MANAGED_BY},${LABELS.commandId}`;
  const podWatch = startListWatch<V1Pod>({
    kubeconfig: svc.cluster.kubeconfig,
    path: `/api/v1/namespaces/${ns}/pods`,
    list: () => core.listNamespacedPod({ namespace: ns, labelSelector: selector }),
    onList: (pods) => pods.forEach(seePod),
    onEvent: (_type, pod) => seePod(pod),
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    retryDelayMs: 100,
  });
  /** Runner containers of these commands with both times known (containerd's, else the pod's). */
  const intervals = async (ids: Set<string>): Promise<Required<RunnerContainer>[]> => {
    await sleep(1500); // the last events and pod updates
    const out: Required<RunnerContainer>[] = [];
    for (const r of runners.values()) {
      const t = taskTimes.get(r.containerId);
      if (ids.has(r.commandId) && t?.start !== undefined && t.end !== undefined) out.push({ ...r, start: t.start, end: t.end });
    }
    return out;
  };
  /** Live Jobs and each command's state, for "no Job before release". */
  const jobsAgainstQueued = async (ids: Set<string> | null) => {
    const jobs = (await batch.listNamespacedJob({ namespace: ns, labelSelector: `${LABELS.managedBy}=${MANAGED_BY}` })).items.filter(
      (j) => !j.metadata?.deletionTimestamp,
    );
    const jobCommands = new Set(jobs.map((j) => j.metadata?.labels?.[LABELS.commandId]));
    const rows = rowsOf<{ id: string; status: string; queue_reason: string | null; attempt: number }>(
      await db.execute(sql`select id, status, queue_reason, attempt from commands where status in ('QUEUED', 'PROCESSING')`),
    );
    const mine = rows.filter((r) => ids === null || ids.has(r.id));
    const queued = mine.filter((r) => r.status === 'QUEUED');
    // A command sent back to the queue has its Job deleted a moment later: only those never released
    // count. With Kueue every QUEUED command handed to the cluster queue has its (suspended) Job.
    const queuedWithJob = queued.filter((r) => jobCommands.has(r.id) && (KUEUE || (r.queue_reason === null && r.attempt === 0))).length;
    return { jobs: jobs.length, queued: queued.length, processing: mine.filter((r) => r.status === 'PROCESSING').length, queuedWithJob };
  };
  const ended = async (ids: string[]): Promise<number> => {
    const rows = await db.select({ status: commandsTable.status }).from(commandsTable).where(inArray(commandsTable.id, ids));
    return rows.filter((r) => r.status === 'SUCCESS' || r.status === 'FAILED').length;
  };
  const waitEnded = async (ids: string[], timeoutMs: number, sample?: () => Promise<void>) => {
    const deadline = Date.now() + timeoutMs;
    while ((await ended(ids)) < ids.length) {
      if (Date.now() > deadline) throw new Error(`commands still running after ${timeoutMs / 1000} s`);
      await sample?.();
      await sleep(250);
    }
  };
  const commandRows = async (ids: string[]): Promise<CommandRow[]> =>
    (await Promise.all(ids.map((id) => repo.findById(id)))).filter((r) => r !== null);
  const failures = (rows: CommandRow[]) =>
    rows.filter((r) => r.status !== 'SUCCESS').map((r) => `${r.id}: ${r.status} ${r.errorStatus} ${r.errorMessage}`);
  const waitSeconds = (rows: CommandRow[]) => rows.map((r) => (r.startedAt!.getTime() - r.createdAt.getTime()) / 1000);
  const s = (v: number) => `${v.toFixed(2)} s`;
  /**
   * For each freed slot (a runner container exit), the first later runner container start not taken by
   * an earlier one: seconds from the exit to that start, and on the way (as the pod watch saw them) to
   * the ended pod's phase and to the next pod's binding to a node.
   */
  const freedToNext = (all: Required<RunnerContainer>[], from: number, to: number) => {
    const starts = [...all].sort((a, b) => a.start - b.start);
    const exits = all.filter((c) => c.end >= from && c.end <= to).sort((a, b) => a.end - b.end);
    const gaps = { next: [] as number[], podEnded: [] as number[], nextBound: [] as number[], boundToRunning: [] as number[] };
    let next = 0;
    for (const exit of exits) {
      while (next < starts.length && starts[next].start < exit.end) next++;
      if (next >= starts.length) break;
      const started = starts[next++];
      gaps.next.push((started.start - exit.end) / 1000);
      const ended = podTimes.get(exit.podName)?.ended;
      if (ended !== undefined) gaps.podEnded.push((ended - exit.end) / 1000);
      const bound = podTimes.get(started.podName)?.bound;
      if (bound !== undefined) {
        gaps.nextBound.push((bound - exit.end) / 1000);
        gaps.boundToRunning.push((started.start - bound) / 1000);
      }
    }
    return gaps;
  };
  type Gaps = ReturnType<typeof freedToNext>;
  const p50p95 = (v: number[]) => `${s(quantile(v, 0.5))} / ${s(quantile(v, 0.95))}`;
  const describeGaps = (g: Gaps) =>
    `freed -> next container running p50 / p95 ${p50p95(g.next)} (n=${g.next.length}); on the way: exit -> its pod ended (watch) ${p50p95(g.podEnded)}, ` +
    `exit -> next pod bound ${p50p95(g.nextBound)} (bound before the exit when negative), next pod bound -> running ${p50p95(g.boundToRunning)}`;
  /** The leading operator's VmRSS (MB), read from /proc in the sandbox (containers are its processes). */
  const operatorRssMB = async (): Promise<number> => {
    const lease = await leases.readNamespacedLease({ name: LEADER_LEASE, namespace: ns });
    const pod = await core.readNamespacedPod({ name: lease.spec!.holderIdentity!, namespace: ns });
    const containerId = pod.status!.containerStatuses![0].containerID!.replace(/^\w+:\/\//, '');
    const tasks = await runProcess('ctr', ['--address', svc.nodeEnv.CONTAINERD_ADDRESS, '-n', 'k8s.io', 'tasks', 'ls']);
    const pid = tasks.stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .find((f) => f[0] === containerId)?.[1];
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024;
  };

  // 1. Idle cluster: one command at a time, submit -> its runner container running.
  const idleIds: string[] = [];
  let warmId = '';
  const idleLatency: number[] = [];
  for (let i = 0; i <= IDLE; i++) {
    const submittedAt = Date.now();
    const id = await api.submit(command());
    await waitEnded([id], 120_000);
    const [c] = await intervals(new Set([id]));
    if (i === 0) {
      warmId = id;
      continue; // the first pod warms caches: not counted
    }
    idleIds.push(id);
    if (c) idleLatency.push((c.start - submittedAt) / 1000);
  }
  if (taskTimes.size === 0) console.log(`# no containerd task events read; ctr events printed: ${JSON.stringify(unparsed)}`);
  const idleRows = await commandRows(idleIds);
  const idleWait = waitSeconds(idleRows);
  console.log(
    `# idle: ${idleIds.length} commands one at a time: submit -> container running ${idleLatency.map((v) => v.toFixed(2)).join(' ')} s; ` +
      `${failures(idleRows).length} not SUCCESS`,
  );

  // 2. A burst far bigger than the nodes.
  const burst = BURST > 0 ? await runBurst() : null;
  async function runBurst() {
    const burstStart = Date.now();
    const burstIds = await Promise.all(Array.from({ length: BURST }, () => api.submit(command())));
    const submitSeconds = (Date.now() - burstStart) / 1000;
    const burstSet = new Set(burstIds);
    let mostQueued = 0;
    let queuedWithJob = 0;
    let lastSample = 0;
    await waitEnded(burstIds, 1_800_000, async () => {
      if (Date.now() - lastSample < 1000) return;
      lastSample = Date.now();
      const seen = await jobsAgainstQueued(burstSet);
      mostQueued = Math.max(mostQueued, seen.queued);
      queuedWithJob = Math.max(queuedWithJob, seen.queuedWithJob);
    });
    const rows = await commandRows(burstIds);
    const drained = (Math.max(...rows.map((r) => r.finishedAt!.getTime())) - burstStart) / 1000;
    const containers = await intervals(burstSet);
    const firstStart = Math.min(...containers.map((c) => c.start));
    const lastEnd = Math.max(...containers.map((c) => c.end));
    const cpuSeconds = containers.reduce((sum, c) => sum + ((c.end - c.start) / 1000) * c.cpus, 0);
    const window = (lastEnd - firstStart) / 1000;
    const gaps = freedToNext(containers, firstStart, lastEnd);
    const containerSeconds = containers.map((c) => (c.end - c.start) / 1000);
    console.log(
      `# burst: ${BURST} submitted in ${submitSeconds.toFixed(1)} s, drained ${drained.toFixed(1)} s after the first submit; ` +
        `${containers.length} runner containers timed (${JSON.stringify(countBy(containers.map((c) => c.node)))}), ` +
        `each running p50 ${s(quantile(containerSeconds, 0.5))} (p95 ${s(quantile(containerSeconds, 0.95))}); ` +
        `${cpuSeconds.toFixed(0)} CPU-s in a window of ${window.toFixed(1)} s on ${totalCpus} CPUs; most QUEUED at once ${mostQueued}; ` +
        `QUEUED commands seen with a Job${KUEUE ? ' (Kueue: suspended Jobs, by design)' : ''}: ${queuedWithJob}; ` +
        `released more than once: ${rows.filter((r) => r.attempt > 1).length}; ` +
        `${failures(rows).length} not SUCCESS ${failures(rows).slice(0, 3).join('; ')}`,
    );
    console.log(`# burst: ${describeGaps(gaps)}`);
    return {
      drained,
      busy: cpuSeconds / (totalCpus * window),
      nodesDrain: cpuSeconds / totalCpus,
      wait: waitSeconds(rows.filter((r) => r.startedAt)),
      gaps,
    };
  }

  // 3. A backlog: `BACKLOG` commands stored QUEUED at once, as the API stores them (copies of a command
  // that ran, with ids of their own, FfmpegCommand first), for an account of their own whose plan lets
  // them all wait (Kueue mode counts a command waiting in Kueue's queue against its plan).
  const backlogSamples: Awaited<ReturnType<typeof jobsAgainstQueued>>[] = [];
  let backlogGaps: Gaps = { next: [], podEnded: [], nextBound: [], boundToRunning: [] };
  let rssIdle = NaN;
  let rssBacklog = NaN;
  let madeSeconds = NaN;
  let made = { jobs: 0, workloads: 0 };
  if (BACKLOG > 0) {
    rssIdle = await operatorRssMB().catch(() => NaN);
    await new PlansRepo(db).create({
      name: 'bench-backlog',
      maxVcpus: BACKLOG + 100,
      maxCommandRunSeconds: 600,
      requestsPerMinute: 1200,
      storageQuotaBytes: 1e12,
      processingQuotaBytesPerMonth: 1e12,
      privateFiles: false,
    });
    const account = await new AccountsRepo(db).createAccount('bench-backlog', 'bench-backlog');
    const template = (await repo.findById(warmId))!;
    const copies: NewCommandRow[] = Array.from({ length: BACKLOG }, () => ({
      ...template,
      seq: undefined,
      id: randomUUID(),
      accountId: account.id,
      outputs: template.outputs.map((o) => ({ ...o, fileId: randomUUID() })),
      status: 'QUEUED',
      processingStage: null,
      errorStatus: null,
      errorMessage: null,
      attempt: 0,
      currentStep: 0,
      stepRetries: 0,
      queueReason: null,
      ffmpegSeconds: 0,
      processedBytes: 0,
      createdAt: new Date(),
      startedAt: null,
      finishedAt: null,
      progress: null,
      resourceCreatedAt: new Date(),
    }));
    const insertStart = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < copies.length) await createFfmpegCommand(crs, ns, copies[next++] as CommandRow);
      }),
    );
    const crSeconds = (Date.now() - insertStart) / 1000;
    for (let i = 0; i < copies.length; i += 500) await db.insert(commandsTable).values(copies.slice(i, i + 500));
    let backlogAt = Date.now();
    console.log(
      `# backlog: ${BACKLOG} FfmpegCommands created in ${crSeconds.toFixed(0)} s (16 at a time), rows inserted in ${((backlogAt - insertStart) / 1000 - crSeconds).toFixed(1)} s`,
    );
    const backlogSet = new Set(copies.map((c) => c.id));
    if (KUEUE) {
      // Every waiting command gets its suspended Job, and Kueue a Workload for each: wait for them all.
      const count = async (list: Promise<unknown>) => {
        const l = (await list) as { items: unknown[]; metadata?: { remainingItemCount?: number } };
        return l.items.length + (l.metadata?.remainingItemCount ?? 0);
      };
      let jobs = 0;
      let workloads = 0;
      let lastLog = 0;
      while (Date.now() - backlogAt < KUEUE_WAIT_SECONDS * 1000) {
        jobs = await count(batch.listNamespacedJob({ namespace: ns, limit: 1 }));
        workloads = await count(
          crs.listNamespacedCustomObject({ group: 'kueue.x-k8s.io', version: 'v1beta2', namespace: ns, plural: 'workloads', limit: 1 }),
        );
        if (Date.now() - lastLog > 30_000) {
          lastLog = Date.now();
          console.log(`#   after ${((Date.now() - backlogAt) / 1000).toFixed(0)} s: ${jobs} Jobs, ${workloads} Workloads`);
        }
        if (jobs >= BACKLOG * 0.99 && workloads >= BACKLOG * 0.99) break;
        await sleep(5000);
      }
      madeSeconds = (Date.now() - backlogAt) / 1000;
      made = { jobs, workloads };
      await sleep(10_000); // the operator settles
      console.log(`# backlog (Kueue): ${jobs} Jobs and ${workloads} Workloads after ${madeSeconds.toFixed(0)} s`);
      backlogAt = Date.now();
    }
    while (Date.now() - backlogAt < BACKLOG_SECONDS * 1000) {
      backlogSamples.push(await jobsAgainstQueued(backlogSet));
      await sleep(1000);
    }
    const backlogSeconds = (Date.now() - backlogAt) / 1000;
    rssBacklog = await operatorRssMB().catch(() => NaN);
    const backlogContainers = (await intervals(backlogSet)).filter((c) => c.start >= backlogAt);
    // Every slot freed while thousands waited.
    backlogGaps = freedToNext(backlogContainers, backlogAt, Date.now());
    await db.execute(
      sql`update commands set status = 'FAILED', error_status = 'CANCELLED', error_message = 'benchmark backlog removed', finished_at = now()
          where account_id = ${account.id} and status = 'QUEUED'`,
    );
    const last = backlogSamples.at(-1);
    const range = (f: (x: (typeof backlogSamples)[number]) => number) =>
      `${Math.min(...backlogSamples.map(f))}..${Math.max(...backlogSamples.map(f))}`;
    console.log(
      `# backlog: ${backlogSamples.length} samples over ${backlogSeconds.toFixed(0)} s: QUEUED ${backlogSamples[0]?.queued} -> ${last?.queued}, ` +
        `Jobs ${range((x) => x.jobs)}, PROCESSING ${range((x) => x.processing)}, QUEUED with a Job ${range((x) => x.queuedWithJob)}` +
        `${KUEUE ? ' (Kueue: suspended Jobs, by design)' : ''}; ${backlogContainers.length} runner containers started; ` +
        `operator RSS ${rssIdle.toFixed(0)} MB idle -> ${rssBacklog.toFixed(0)} MB with the backlog; the rest cancelled (in the database)`,
    );
    console.log(`# backlog: ${describeGaps(backlogGaps)}`);
  }

  const mode = KUEUE ? 'Kueue' : 'built-in';
  reportRow({
    what: `cluster queueing (${mode}), 2 real nodes: submit -> runner container running on an idle cluster (${idleLatency.length} one at a time), p50 (p95); queue wait p50`,
    service: `${s(quantile(idleLatency, 0.5))} (${s(quantile(idleLatency, 0.95))}); wait ${s(quantile(idleWait, 0.5))}`,
    baseline: '-',
    ratio: '-',
    goal: '<= 1 s p50',
  });
  if (burst) {
    reportRow({
      what: `cluster queueing (${mode}), 2 real nodes (${totalCpus} CPUs): burst of ${BURST} x 1-vCPU ${SECONDS} s commands, drain time (nodes' own: CPU-s / CPUs)`,
      service: s(burst.drained),
      baseline: s(burst.nodesDrain),
      ratio: `${(burst.drained / burst.nodesDrain).toFixed(2)}x`,
      goal: '-',
    });
    reportRow({
      what: `cluster queueing (${mode}): burst of ${BURST}, nodes' CPUs busy (requests x running / CPUs x first start..last end); queue wait p50 / p95; freed -> next container running p50 / p95`,
      service: `${(burst.busy * 100).toFixed(1)}%; wait ${p50p95(burst.wait)}; next ${p50p95(burst.gaps.next)}`,
      baseline: '100%',
      ratio: `${burst.busy.toFixed(2)}x`,
      goal: '>= 85% (goal 95%)',
    });
  }
  if (BACKLOG > 0 && !KUEUE) {
    reportRow({
      what: `cluster queueing, built-in: backlog of ${BACKLOG} QUEUED: Jobs / QUEUED with a Job (most, ${backlogSamples.length} samples); freed -> next container running p50 / p95; operator RSS idle / with backlog`,
      service:
        `${Math.max(...backlogSamples.map((x) => x.jobs))} / ${Math.max(...backlogSamples.map((x) => x.queuedWithJob))}; ` +
        `next ${p50p95(backlogGaps.next)}; ${rssIdle.toFixed(0)} / ${rssBacklog.toFixed(0)} MB`,
      baseline: burst ? `burst of ${BURST}: next ${p50p95(burst.gaps.next)}` : '-',
      ratio: burst ? `${(quantile(backlogGaps.next, 0.5) / quantile(burst.gaps.next, 0.5)).toFixed(2)}x` : '-',
      goal: 'no Job before release',
    });
  }
  if (BACKLOG > 0 && KUEUE) {
    reportRow({
      what: `cluster queueing, Kueue: backlog of ${BACKLOG} (suspended Jobs + Workloads): operator RSS idle / with them; freed -> next container running p50 / p95; Jobs + Workloads made (in)`,
      service:
        `${rssIdle.toFixed(0)} / ${rssBacklog.toFixed(0)} MB; next ${p50p95(backlogGaps.next)}; ` +
        `${made.jobs} + ${made.workloads} in ${madeSeconds.toFixed(0)} s (${(made.jobs / madeSeconds).toFixed(1)} Jobs/s)`,
      baseline: '-',
      ratio: '-',
      goal: '<= 150 MB (operator)',
    });
  }
  await podWatch.stop();
} finally {
  for (const child of children) child.kill();
  await svc.close();
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}
