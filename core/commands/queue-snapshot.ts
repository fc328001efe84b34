// Where a QUEUED command stands in the queue, and when it may start, without a query per poll: each
// process keeps a snapshot of the queue's order (the order admission takes commands in: plan
// priority, then arrival; CommandsRepo.admissible) and of recent starts, read in one query, at most
// every `refreshMs` and only while someone asks about a QUEUED command.
//
// Commands waiting in the cluster's own queue (Kueue) are not in the snapshot: Kueue decides their
// order, and they show no position.
import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { rowsOf } from '../db/migrate.ts';
import { CommandStatus } from './command-status.ts';

/** Starts counted for the estimate: those of the last 15 minutes. */
export const RECENT_STARTS_WINDOW_MS = 15 * 60_000;
/** The least span the starts are spread over: a burst of starts does not promise a rate it cannot keep. */
export const MIN_RATE_SPAN_MS = 60_000;

export interface QueueState {
  /** QUEUED command ids in the order admission takes them. */
  order: string[];
  /** Commands that started in the window, and the first of those starts. */
  recentStarts: number;
  firstRecentStart: Date | null;
}

export interface QueueView {
  /** Commands ahead of it (0: next); null when not QUEUED, not in the service's queue (Kueue), or not seen yet. */
  queuePosition: number | null;
  /** Seconds until it may start at the recent rate of starts; null when nothing started recently. */
  estimatedStartSeconds: number | null;
}

export const NOT_QUEUED: QueueView = { queuePosition: null, estimatedStartSeconds: null };

/**
 * Seconds until the command at `position` starts, if commands go on starting at the rate of the last
 * window: (position + 1) starts at `starts` per span, the span running from the first recent start to
 * now (at least MIN_RATE_SPAN_MS). Null with no recent start.
 */
export function estimatedStartSeconds(position: number, state: Omit<QueueState, 'order'>, now: number): number | null {
  if (state.recentStarts <= 0 || state.firstRecentStart === null) return null;
  const spanMs = Math.min(RECENT_STARTS_WINDOW_MS, Math.max(MIN_RATE_SPAN_MS, now - state.firstRecentStart.getTime()));
  const startsPerSecond = state.recentStarts / (spanMs / 1000);
  return Math.round((position + 1) / startsPerSecond);
}

export interface QueueSnapshotOptions {
  load: (since: Date) => Promise<QueueState>;
  refreshMs?: number;
  clock?: () => number;
}

interface Snapshot {
  positions: Map<string, number>;
  state: QueueState;
  takenAt: number;
}

export class QueueSnapshot {
  private readonly o: Required<QueueSnapshotOptions>;
  private current: Snapshot | null = null;
  private refreshing: Promise<Snapshot> | null = null;

  constructor(o: QueueSnapshotOptions) {
    this.o = { refreshMs: 2_000, clock: Date.now, ...o };
  }

  /** Where the command stands: read from the snapshot, refreshed first when it is older than refreshMs. */
  async view(command: { id: string; status: string }): Promise<QueueView> {
    if (command.status !== CommandStatus.QUEUED) return NOT_QUEUED;
    const snapshot = await this.fresh();
    const position = snapshot.positions.get(command.id);
    if (position === undefined) return NOT_QUEUED;
    return { queuePosition: position, estimatedStartSeconds: estimatedStartSeconds(position, snapshot.state, this.o.clock()) };
  }

  private async fresh(): Promise<Snapshot> {
    const now = this.o.clock();
    if (this.current !== null && now - this.current.takenAt < this.o.refreshMs) return this.current;
    // Concurrent asks share one read.
    this.refreshing ??= this.o
      .load(new Date(now - RECENT_STARTS_WINDOW_MS))
      .then((state) => (this.current = { state, positions: new Map(state.order.map((id, i) => [id, i])), takenAt: now }))
      .finally(() => (this.refreshing = null));
    return this.refreshing;
  }
}

/**
 * The queue's order and the recent starts, in one query of one row (the commands_active and
 * commands_started_at indexes serve it): the ids come as one text, which costs far less than a row
 * each (PGlite: about a tenth, with 10,000 commands waiting).
 */
export async function loadQueueState(db: Db, since: Date): Promise<QueueState> {
  const result = await db.execute(sql`
    select
      (select count(*)::int from commands where started_at > ${since.toISOString()}::timestamptz) as starts,
      (select min(started_at) from commands where started_at > ${since.toISOString()}::timestamptz) as first_start,
      (select coalesce(string_agg(c.id::text, ',' order by p.priority desc, c.seq), '')
        from commands c join accounts a on a.id = c.account_id join plans p on p.name = a.plan
        where c.status = ${CommandStatus.QUEUED} and not c.in_cluster_queue) as ids`);
  const [row] = rowsOf<{ starts: number; first_start: string | Date | null; ids: string }>(result);
  return {
    order: row.ids === '' ? [] : row.ids.split(','),
    recentStarts: Number(row.starts),
    firstRecentStart: row.first_start ? new Date(row.first_start) : null,
  };
}
