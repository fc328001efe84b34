// Part 1 of the cluster benchmark: many commands in flight at once (all submitted together through
// the API), and per command the operator's overhead at both ends of its Job.
//
// Who waits where: the test node agent advertises 64 CPUs and, like a scheduler with room, binds
// every pod at once (it does not hold pods back for CPU); the Kubernetes job backend has no capacity
// of its own (capacityVcpus null: a real cluster's scheduler decides). What holds commands back is
// admission in the operator: the account's plan (max vCPUs, FIFO per account). The benchmark's
// account gets a plan of --max-vcpus (default 4) so that a few runner processes run at a time on
// this 2-core machine and the rest wait QUEUED in the operator, as commands beyond a plan's limit
// wait in a real install.
//
// So "submit -> Job created" for a queued command is mostly waiting for an earlier command to end.
// The operator's own part is printed next to it: for the commands admissible at submit (the first
// max-vcpus ones) submit -> Job created as is; for the others, from the moment capacity freed (the
// operator recorded the end of the earlier command whose vCPU it takes: commands.finished_at, the
// operator's clock just before it writes SUCCESS) to the Job's ADDED watch event. With FIFO, one
// account and 1 vCPU each, the (k+1)-th command to start (0-based k >= max) takes the vCPU freed by the
// (k - max + 1)-th command to end.
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import postgres from 'postgres';
import type { ClusterService } from '../cluster/service-fixture.ts';
import { startTimeline, type CommandTimes } from './cluster-timeline.ts';
import { quantile, reportRow } from './stats.ts';

export const CHEAP_COMMAND = {
  ffmpeg_command: '-f lavfi -i testsrc=size=64x48:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}',
  output_files: { out_1: 'o.mp4' },
  vcpu_count: 1,
};

export interface InFlightOptions {
  count: number;
  maxVcpus: number;
}

const BIG = 1e15;

export async function benchCommandsInFlight(svc: ClusterService, o: InFlightOptions): Promise<string[]> {
  const planName = `bench-${o.maxVcpus}-vcpus`;
  await new PlansRepo(svc.database.db).create({
    name: planName,
    maxVcpus: o.maxVcpus,
    maxCommandRunSeconds: 3600,
    privateFiles: true,
    storageQuotaBytes: BIG,
    processingQuotaBytesPerMonth: BIG,
    requestsPerMinute: 100_000_000,
  });
  const account = await new AccountsRepo(svc.database.db).createAccount(`bench-${Date.now()}`, planName);
  const key = (await new AccountsRepo(svc.database.db).createKey(account.id, 'main')).key;
  const api = svc.client(key);
  const timeline = startTimeline(svc, key);
  await new Promise((r) => setTimeout(r, 1000)); // the watches' first lists

  const submittedAt = new Map<string, number>();
  const burstStart = Date.now();
  const ids = await Promise.all(
    Array.from({ length: o.count }, async () => {
      const t = Date.now();
      const id = await api.submit(CHEAP_COMMAND);
      submittedAt.set(id, t);
      return id;
    }),
  );
  const burstSeconds = (Date.now() - burstStart) / 1000;
  console.error(`${o.count} commands submitted in ${burstSeconds.toFixed(1)} s; waiting for them to end`);
  const progress = setInterval(() => {
    const ended = ids.filter((id) => timeline.times.get(id)?.success || timeline.times.get(id)?.failed).length;
    console.error(`  ${ended}/${o.count} ended after ${((Date.now() - burstStart) / 1000).toFixed(0)} s`);
  }, 30_000);
  try {
    await timeline.allEnded(ids, Math.max(600_000, o.count * 10_000));
  } finally {
    clearInterval(progress);
    await timeline.stop();
  }
  const allSeconds = (Date.now() - burstStart) / 1000;

  const sql = postgres(svc.databaseUrl, { max: 1, onnotice: () => {} });
  const rows = await sql<{ id: string; started_at: Date | null; finished_at: Date | null }[]>`
    select id, started_at, finished_at from commands where id in ${sql(ids)} order by seq`;
  await sql.end();

  const failed = ids.filter((id) => timeline.times.get(id)?.failed);
  const t = (id: string): CommandTimes => timeline.times.get(id) ?? {};
  const finishedSorted = rows
    .map((r) => r.finished_at?.getTime())
    .filter((x): x is number => x !== undefined)
    .sort((a, b) => a - b);
  const admissibleAtSubmit: number[] = [];
  const capacityToJob: number[] = [];
  const capacityToAdmitted: number[] = [];
  const admittedToJob: number[] = [];
  rows.forEach((r, k) => {
    const created = t(r.id).jobCreated;
    if (created === undefined) return;
    const submit = submittedAt.get(r.id)!;
    if (k < o.maxVcpus) {
      admissibleAtSubmit.push(created - submit);
      return;
    }
    const freed = finishedSorted[k - o.maxVcpus];
    if (freed === undefined) return;
    const admissible = Math.max(submit, freed);
    capacityToJob.push(created - admissible);
    if (r.started_at) {
      capacityToAdmitted.push(r.started_at.getTime() - admissible);
      admittedToJob.push(created - r.started_at.getTime());
    }
  });
  const between = (from: keyof CommandTimes, to: keyof CommandTimes) =>
    ids
      .map((id) => t(id))
      .filter((x) => typeof x[from] === 'number' && typeof x[to] === 'number')
      .map((x) => (x[to] as number) - (x[from] as number));
  const row = (label: string, values: number[]) =>
    values.length === 0
      ? `| ${label} | - | - | - | 0 |`
      : `| ${label} | ${ms(quantile(values, 0.5))} | ${ms(quantile(values, 0.95))} | ${ms(Math.max(...values))} | ${values.length} |`;
  const submitToJob = ids.filter((id) => t(id).jobCreated !== undefined).map((id) => t(id).jobCreated! - submittedAt.get(id)!);
  const successFirst = (from: keyof CommandTimes) => between(from, 'success').filter((v) => v < 0).length;
  const atFirstPoll = ids.filter((id) => t(id).successAtFirstPoll).length;
  const resultToSuccess = between('resultStored', 'success');
  const spread = (values: number[]) => (values.length ? `p50 ${ms(quantile(values, 0.5))}, p95 ${ms(quantile(values, 0.95))}` : '-');
  reportRow({
    what: `cluster mode, ${o.count} commands in flight: capacity freed -> Job created`,
    service: spread(capacityToJob),
    baseline: '-',
    ratio: '-',
    goal: '<= 200 ms',
  });
  reportRow({
    what: `cluster mode, ${o.count} commands in flight: runner's result stored -> SUCCESS through the API`,
    service: spread(resultToSuccess),
    baseline: '-',
    ratio: '-',
    goal: '<= 200 ms',
  });

  return [
    `${o.count} commands (${CHEAP_COMMAND.ffmpeg_command}, vcpu_count 1) submitted at once in ${burstSeconds.toFixed(1)} s; ` +
      `all ended after ${allSeconds.toFixed(0)} s (${(o.count / allSeconds).toFixed(1)} commands/s); ` +
      `${failed.length} failed${failed.length ? ` (first: ${t(failed[0]).failed})` : ''}. ` +
      `The account's plan allows ${o.maxVcpus} vCPUs: at most ${o.maxVcpus} Jobs at a time, the rest wait QUEUED in the operator.`,
    '',
    `| cluster mode, ${o.count} commands in flight, plan max ${o.maxVcpus} vCPUs | p50 | p95 | max | n |`,
    '|---|---|---|---|---|',
    row('submit -> Job created, raw (queued commands include waiting for a free vCPU)', submitToJob),
    row(`submit -> Job created, the ${o.maxVcpus} commands admissible at submit`, admissibleAtSubmit),
    row("capacity freed (earlier command's end recorded) -> Job created, queued commands", capacityToJob),
    row('  of which: capacity freed -> admitted (commands.started_at)', capacityToAdmitted),
    row('  of which: admitted -> Job created (ADDED event)', admittedToJob),
    row("runner's result stored -> SUCCESS visible through the API", resultToSuccess),
    row(
      `pod exit observed -> SUCCESS visible (negative: SUCCESS first, ${successFirst('podExited')} times)`,
      between('podExited', 'success'),
    ),
    row(
      `Job Complete observed -> SUCCESS visible (negative: SUCCESS first, ${successFirst('jobComplete')} times)`,
      between('jobComplete', 'success'),
    ),
    row('pod exit observed -> Job Complete observed (the Job controller, for comparison)', between('podExited', 'jobComplete')),
    '',
    `Measured from: submit = just before the POST is sent; Job created = the Job's ADDED event on this process's list+watch of Jobs; ` +
      `pod exit = the first pod watch event with the container terminated (the node agent's status report); ` +
      `Job Complete = the first Job watch event with condition Complete=True (status.completionTime has 1 s resolution); ` +
      `result stored = job_events.created_at of the runner's result (read every 20 ms); ` +
      `SUCCESS visible = the first GET /v1/commands/:id answering SUCCESS, ` +
      `polled every 20 ms only from the first of those three end signals ` +
      `(${timeline.polls()} polls in all; ${atFirstPoll} commands were SUCCESS at their first poll, so their figure is an upper bound). ` +
      `The runner reports its result before it exits, ` +
      `so the operator can record SUCCESS before the pod's exit or the Job's Complete is seen; ` +
      `it deletes the Job once the result is recorded, mostly before the Job controller marks it Complete, ` +
      `hence the few Job Complete figures. ` +
      `The API, the operator and these observers share one Node process (the fixture), so they share its event loop.`,
  ];
}

const ms = (v: number) => `${Math.round(v)} ms`;
