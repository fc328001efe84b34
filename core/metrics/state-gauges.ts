// Gauges of the service's state, read from the database at scrape time, so they are right whichever
// process changed the state (in cluster mode the API replicas submit, the operator runs). Registered
// only where the reconciler runs (embedded service; the leading operator replica), so they are not
// repeated by every API replica. Each read is one small query over the partial indexes of unfinished
// rows, never over the whole history: ended commands are counted by ffop_commands_finished_total.
import { sql } from 'drizzle-orm';
import { Gauge, type Registry } from 'prom-client';
import type { Db } from '../db/database.ts';
import { rowsOf } from '../db/migrate.ts';

/** One read shared by the gauges of one scrape (they collect concurrently). */
function oncePerScrape<T>(load: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | null = null;
  return () =>
    (inFlight ??= load().finally(() => {
      inFlight = null;
    }));
}

interface ActiveCounts {
  queued: number;
  processing: number;
  vcpusInUse: number;
}

interface PlanQueue {
  plan: string;
  queued: number;
  oldestSeconds: number;
}

export function registerStateGauges(registry: Registry, db: Db): void {
  const active = oncePerScrape(async (): Promise<ActiveCounts> => {
    // commands_active_idx covers exactly these rows.
    const rows = rowsOf<{ status: string; n: number; vcpus: number }>(
      await db.execute(sql`
        select status, count(*)::int as n, coalesce(sum(vcpu_count), 0)::int as vcpus
        from commands where status in ('QUEUED', 'PROCESSING') group by status`),
    );
    const of = (status: string) => rows.find((r) => r.status === status);
    return {
      queued: Number(of('QUEUED')?.n ?? 0),
      processing: Number(of('PROCESSING')?.n ?? 0),
      vcpusInUse: Number(of('PROCESSING')?.vcpus ?? 0),
    };
  });
  const queues = oncePerScrape(async (): Promise<PlanQueue[]> => {
    // Every plan, 0 when nothing waits; the queued rows come from commands_active_idx.
    const rows = rowsOf<{ plan: string; queued: number; oldest_seconds: number }>(
      await db.execute(sql`
        select p.name as plan, coalesce(q.n, 0)::int as queued, coalesce(q.oldest_seconds, 0)::float8 as oldest_seconds
        from plans p left join (
          select a.plan, count(*) as n, extract(epoch from now() - min(c.created_at)) as oldest_seconds
          from commands c join accounts a on a.id = c.account_id
          where c.status = 'QUEUED' group by a.plan
        ) q on q.plan = p.name`),
    );
    return rows.map((r) => ({ plan: r.plan, queued: Number(r.queued), oldestSeconds: Math.max(0, Number(r.oldest_seconds)) }));
  });

  const gauges = [
    new Gauge({
      name: 'ffop_commands',
      help: 'Unfinished commands by status (QUEUED, PROCESSING).',
      labelNames: ['status'] as const,
      registers: [],
      async collect() {
        const counts = await active();
        this.set({ status: 'QUEUED' }, counts.queued);
        this.set({ status: 'PROCESSING' }, counts.processing);
      },
    }),
    new Gauge({
      name: 'ffop_vcpus_in_use',
      help: 'vCPUs of the PROCESSING commands (sum of their vcpu_count).',
      registers: [],
      async collect() {
        this.set((await active()).vcpusInUse);
      },
    }),
    new Gauge({
      name: 'ffop_queue_depth',
      help: 'QUEUED commands by the plan of their account.',
      labelNames: ['plan'] as const,
      registers: [],
      async collect() {
        const rows = await queues();
        this.reset(); // a plan that no longer exists has no series
        for (const r of rows) this.set({ plan: r.plan }, r.queued);
      },
    }),
    new Gauge({
      name: 'ffop_queue_oldest_wait_seconds',
      help: 'How long the oldest QUEUED command of each plan has waited (0 when none waits).',
      labelNames: ['plan'] as const,
      registers: [],
      async collect() {
        const rows = await queues();
        this.reset();
        for (const r of rows) this.set({ plan: r.plan }, r.oldestSeconds);
      },
    }),
    new Gauge({
      name: 'ffop_webhook_deliveries_pending',
      help: 'Webhook deliveries not yet delivered nor given up (PENDING).',
      registers: [],
      async collect() {
        // webhook_deliveries_due_idx covers exactly these rows.
        const [row] = rowsOf<{ n: number }>(
          await db.execute(sql`select count(*)::int as n from webhook_deliveries where status = 'PENDING'`),
        );
        this.set(Number(row?.n ?? 0));
      },
    }),
  ];
  for (const gauge of gauges) registry.registerMetric(gauge);
}
