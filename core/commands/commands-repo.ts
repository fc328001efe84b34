// Reads and writes of commands and their output files. Every read a client can trigger is scoped by
// account, so another account's ids behave exactly like unknown ones.
import { and, asc, desc, eq, getTableColumns, gt, inArray, isNotNull, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import { rowsOf } from '../db/migrate.ts';
import { accounts, commands, files } from '../db/schema.ts';
import { insertRowsWhere } from '../db/insert-rows-where.ts';
import { quotaUsageSql } from '../files/files-repo.ts';
import { newCommandRoomSql, VCPUS, type NewCommandLimits, type NewCommandRoom } from '../accounts/plan-rules.ts';
import { CommandStatus } from './command-status.ts';

export type CommandRow = typeof commands.$inferSelect;
export type NewCommandRow = typeof commands.$inferInsert;
/** The table's columns by property name (insert reads back those a row leaves out). */
const COMMAND_COLUMNS = getTableColumns(commands);

/** A new command's account quotas, checked by the statement that stores it (Quotas.storeNewCommand). */
export interface NewCommandQuotas extends NewCommandLimits {
  accountId: string;
  /** The first day of this month (UTC), yyyy-mm-dd: processing counts per month. */
  month: string;
}

/** A new command was not stored: a quota of its account is used up (`room` says which, as the statement decided). */
export class QuotaUsedUp extends Error {
  readonly room: NewCommandRoom;
  constructor(room: NewCommandRoom) {
    const { storedBytes, processedBytes } = room.usage;
    super(`a quota is used up: ${storedBytes} bytes stored, ${processedBytes} bytes processed this month`);
    this.room = room;
  }
}

/** A step of a command as one attempt runs it (a job). */
export type RunningStep = { commandId: string; step: number; attempt: number };
export type { FileRow, NewFileRow } from '../files/files-repo.ts';
import type { FileRow, NewFileRow } from '../files/files-repo.ts';
import { ProcessingStage } from '../jobs/step-spec.ts';

/** Notified with a command's id when its cancel is requested: the reconciler (the operator, in cluster mode) acts at once. */
export const COMMAND_CANCEL_CHANNEL = 'ffop_command_cancel';

/** A cancel request: recorded (also when it was already), or refused because the command has ended. */
export type CancelRequest = { requested: true } | { requested: false; endedWith: CommandStatus };

/** A command with its output files, oldest first: what a poll shows. */
export interface CommandWithOutputs {
  row: CommandRow;
  files: FileRow[];
}

/** What a reconcile pass needs of every unfinished command: no JSON columns, so a long queue reads cheaply. */
export type ActiveCommand = Pick<
  CommandRow,
  | 'id'
  | 'accountId'
  | 'status'
  | 'vcpuCount'
  | 'currentStep'
  | 'attempt'
  | 'stepRetries'
  | 'inClusterQueue'
  | 'ffmpegSeconds'
  | 'processedBytes'
  | 'resourceCreatedAt'
>;

/** A PROCESSING command, as admission sees it. */
export type ProcessingCommand = ActiveCommand & {
  /** Its last step is past ffmpeg, probing and storing the outputs (admission lets the next command start). */
  finishing: boolean;
};

/** A QUEUED command with the vCPU maximum its account's plan allows now. */
export interface QueuedCommand {
  id: string;
  accountId: string;
  vcpuCount: number;
  planMaxVcpus: number;
  /** The plan's name (metrics label the queue wait with it). */
  plan: string;
  /** Cluster mode: when its FfmpegCommand was created (null: not known to exist). */
  resourceCreatedAt: Date | null;
}

/** Rows with the same key set the same columns and can be stored in one statement (CommandsRepo.insertMany). */
export function sameColumnsKey(row: NewCommandRow): string {
  return Object.keys(COMMAND_COLUMNS)
    .map((key) => (row[key as keyof NewCommandRow] === undefined ? '0' : '1'))
    .join('');
}

/** What an item of the commands list shows: the command, with its outputs' count and live bytes. */
export interface CommandListRow extends Pick<
  CommandRow,
  | 'id'
  | 'status'
  | 'environmentName'
  | 'createdAt'
  | 'finishedAt'
  | 'processedBytes'
  | 'ffmpegSeconds'
  | 'processingStage'
  | 'queueReason'
  | 'errorStatus'
  | 'errorMessage'
  | 'retryOf'
  | 'retriedBy'
  // progress and timings (timings.ts)
  | 'progress'
  | 'currentStep'
  | 'stepStartedAt'
  | 'timings'
> {
  outputFileCount: number;
  storedBytes: number;
}

export function listRowOf({ row, files }: CommandWithOutputs): CommandListRow {
  return {
    ...row,
    outputFileCount: files.length,
    storedBytes: files.reduce((sum, f) => sum + (f.isDeleted ? 0 : (f.sizeBytes ?? 0)), 0),
  };
}

export class CommandsRepo {
  private readonly db: Db;
  constructor(db: Db) {
    this.db = db;
  }

  /**
   * Stores a new command; returns it as stored (defaults filled in). Reads back only the columns the
   * row leaves to the database (seq, created_at, defaults): reading the others back parsed its JSON
   * columns again and cost about a third of a submit's insert.
   *
   * With `quotas`, only if the account's quotas have room, checked in the same statement: a submit
   * makes one round trip, not a read and then a write. Refused, nothing is stored and QuotaUsedUp
   * says what the account uses.
   */
  async insert(row: NewCommandRow, quotas?: NewCommandQuotas): Promise<CommandRow> {
    const [stored] = await this.insertMany([row], quotas);
    return stored;
  }

  /**
   * Stores new commands of one account in one statement (submits that arrived together,
   * insert-batcher.ts), in the order given; all or none. Every row must leave out the same columns
   * (sameColumnsKey): a column one row sets would otherwise be stored as null, not as its default,
   * for another. With `quotas`, as insert: a new command adds nothing to what the quotas count, so the
   * room the statement reads once decides for each of them as it would alone.
   */
  async insertMany(rows: NewCommandRow[], quotas?: NewCommandQuotas): Promise<CommandRow[]> {
    const leftOut = Object.entries(COMMAND_COLUMNS).filter(([key]) => rows[0][key as keyof NewCommandRow] === undefined);
    if (rows.some((row) => sameColumnsKey(row) !== sameColumnsKey(rows[0]))) {
      throw new Error('commands stored together must leave out the same columns');
    }
    const returning = sql.join([sql`id`, ...leftOut.map(([, column]) => sql.identifier(column.name))], sql`, `);
    // As the driver gives them (a raw statement): each column maps its own, as drizzle's reads do.
    const filledIn = (row: NewCommandRow, stored: Record<string, unknown> | undefined): CommandRow => {
      if (!stored) throw new Error(`command ${row.id} was not stored with the others`);
      const filled = leftOut.map(([key, column]) => [
        key,
        stored[column.name] === null ? null : column.mapFromDriverValue(stored[column.name]),
      ]);
      return { ...row, ...Object.fromEntries(filled) } as CommandRow;
    };
    // The database may return inserted rows in any order: each is matched by its id.
    const inOrder = (stored: Record<string, unknown>[]) => {
      const byId = new Map(stored.map((r) => [r.id, r]));
      return rows.map((row) => filledIn(row, byId.get(row.id)));
    };
    if (!quotas) {
      return inOrder(rowsOf(await this.db.execute(sql`${insertRowsWhere(commands, rows, sql`true`).statement} returning ${returning}`)));
    }
    // The quotas' rules decide in the statement (plan-rules.ts); a refusal is worded from their columns.
    const hasRoom = sql`(select processing_room and storage_room from room)`;
    const result = await this.db.execute(sql`
      with room as (select stored, processed, ${newCommandRoomSql(quotas)} from (${quotaUsageSql(quotas.accountId, quotas.month)}) usage),
      inserted as (${insertRowsWhere(commands, rows, hasRoom).statement} returning ${returning})
      select room.stored, room.processed, room.processing_room, room.storage_room, inserted.* from room left join inserted on true`);
    type Outcome = { id: string | null; stored: number; processed: number; processing_room: boolean; storage_room: boolean };
    const outcomes = rowsOf<Record<string, unknown> & Outcome>(result);
    const [first] = outcomes;
    if (first.id === null) {
      throw new QuotaUsedUp({
        processingRoom: first.processing_room,
        storageRoom: first.storage_room,
        usage: { storedBytes: Number(first.stored), processedBytes: Number(first.processed) },
      });
    }
    return inOrder(outcomes);
  }

  /**
   * A command with its output files in one query: the poll path, the API's busiest read. Whatever its
   * account: the poll cache (poll-cache.ts) checks the account on every read.
   */
  async findWithOutputs(id: string): Promise<CommandWithOutputs | null> {
    return (await this.findManyWithOutputs([id])).get(id) ?? null;
  }

  async findById(id: string): Promise<CommandRow | null> {
    const [row] = await this.db.select().from(commands).where(eq(commands.id, id));
    return row ?? null;
  }

  /** Ids of a page of the account's commands, newest first: the list's items come from the poll cache. */
  async listIds(accountId: string, limit: number, offset: number): Promise<string[]> {
    const rows = await this.db
      .select({ id: commands.id })
      .from(commands)
      .where(eq(commands.accountId, accountId))
      .orderBy(desc(commands.createdAt), desc(commands.seq))
      .limit(limit)
      .offset(offset);
    return rows.map((r) => r.id);
  }

  /** Commands with their output files, in one query, whatever their account (the poll cache checks it). */
  async findManyWithOutputs(ids: string[]): Promise<Map<string, CommandWithOutputs>> {
    const found = new Map<string, CommandWithOutputs>();
    if (ids.length === 0) return found;
    const joined = await this.db
      .select({ command: commands, file: files })
      .from(commands)
      .leftJoin(files, eq(files.commandId, commands.id))
      .where(inArray(commands.id, ids))
      .orderBy(asc(files.createdAt));
    for (const { command, file } of joined) {
      let entry = found.get(command.id);
      if (entry === undefined) found.set(command.id, (entry = { row: command, files: [] }));
      if (file) entry.files.push(file);
    }
    return found;
  }

  async outputFiles(commandId: string): Promise<FileRow[]> {
    return this.db.select().from(files).where(eq(files.commandId, commandId)).orderBy(asc(files.createdAt));
  }

  /** QUEUED and PROCESSING commands, oldest first: the reconciler's working set. */
  async active(): Promise<ActiveCommand[]> {
    return this.activeWith([CommandStatus.QUEUED, CommandStatus.PROCESSING]);
  }

  /** QUEUED commands (not yet handed to a cluster queue) that ask more than `vcpus`. */
  async queuedAbove(vcpus: number): Promise<ActiveCommand[]> {
    return this.activeWith([CommandStatus.QUEUED], and(eq(commands.inClusterQueue, false), gt(commands.vcpuCount, vcpus)));
  }

  /** The name of the account's plan now (null for an unknown account). */
  async planOf(accountId: string): Promise<string | null> {
    const [row] = await this.db.select({ plan: accounts.plan }).from(accounts).where(eq(accounts.id, accountId));
    return row?.plan ?? null;
  }

  /** QUEUED commands whose step waits in the cluster's queue (Kueue) with its Job made suspended. */
  async inClusterQueueNow(): Promise<ActiveCommand[]> {
    return this.activeWith([CommandStatus.QUEUED], eq(commands.inClusterQueue, true));
  }

  /** QUEUED and PROCESSING commands whose cancel was requested: the commands_active index finds them. */
  async cancelRequested(): Promise<ActiveCommand[]> {
    return this.activeWith([CommandStatus.QUEUED, CommandStatus.PROCESSING], isNotNull(commands.cancelRequestedAt));
  }

  private activeWith(statuses: CommandStatus[], also?: SQL): Promise<ProcessingCommand[]> {
    return this.db
      .select({
        id: commands.id,
        accountId: commands.accountId,
        status: commands.status,
        vcpuCount: commands.vcpuCount,
        currentStep: commands.currentStep,
        attempt: commands.attempt,
        stepRetries: commands.stepRetries,
        inClusterQueue: commands.inClusterQueue,
        ffmpegSeconds: commands.ffmpegSeconds,
        processedBytes: commands.processedBytes,
        resourceCreatedAt: commands.resourceCreatedAt,
        finishing: sql<boolean>`coalesce(${commands.processingStage} = ${ProcessingStage.UPLOADING}
          and ${commands.currentStep} = jsonb_array_length(${commands.steps}) - 1, false)`,
      })
      .from(commands)
      .where(and(inArray(commands.status, statuses), also))
      .orderBy(asc(commands.seq));
  }

  /**
   * QUEUED commands that fit their account's plan (its VCPUS rule, plan-rules.ts) next to what the account runs, plans of higher
   * priority first, then oldest first, at most `limit`. FIFO per account: a command that does not fit hides the account's later ones. The
   * database walks the queue, so a pass reads only the rows it may start, however long the queue.
   */
  async admissible(limit: number): Promise<QueuedCommand[]> {
    return queuedCommandsOf(await this.db.execute(admissibleSql(limit)));
  }

  /**
   * What a reconcile pass reads, in one statement instead of two: the PROCESSING commands (oldest
   * first, as admission sees them) and the admissible ones (as admissible(limit) reads them); and
   * how many commands are QUEUED (admissible or not), not counting those waiting in a cluster's queue. On PGlite each
   * statement costs the service milliseconds of CPU, and a pass runs after every change.
   */
  async runningAndAdmissible(limit: number): Promise<{ running: ProcessingCommand[]; admissible: QueuedCommand[]; queued: number }> {
    const result = await this.db.execute(sql`
      select
        coalesce((select json_agg(r order by r.seq) from (
          select id, account_id, status, vcpu_count, current_step, attempt, step_retries, in_cluster_queue,
                 ffmpeg_seconds, processed_bytes, resource_created_at, seq,
                 coalesce(processing_stage = ${ProcessingStage.UPLOADING} and current_step = jsonb_array_length(steps) - 1, false) as finishing
          from commands where status = ${CommandStatus.PROCESSING}) r), '[]'::json) as running,
        coalesce((select json_agg(a order by a.turn) from (${admissibleSql(limit)}) a), '[]'::json) as admissible,
        (select count(*)::int from commands where status = ${CommandStatus.QUEUED} and not in_cluster_queue) as queued`);
    const [row] = rowsOf<{ running: unknown; admissible: unknown; queued: number }>(result);
    return {
      running: runningCommandsOf(parsedJson(row.running)),
      admissible: queuedCommandsOf(parsedJson(row.admissible)),
      queued: Number(row.queued),
    };
  }

  /** QUEUED commands asking more vCPUs than their account's plan allows now (the plan was lowered). */
  async overPlan(): Promise<QueuedCommand[]> {
    const result = await this.db.execute(sql`
      select c.id, c.account_id, c.vcpu_count, p.max_vcpus, p.name as plan, c.resource_created_at
      from commands c join accounts a on a.id = c.account_id join plans p on p.name = a.plan
      where c.status = ${CommandStatus.QUEUED} and not c.in_cluster_queue and not ${VCPUS.allowsSql(sql`c.vcpu_count`, sql`p.max_vcpus`)}`);
    return queuedCommandsOf(result);
  }

  /**
   * Stores the stage a step reached and its progress, if that step still runs (its command PROCESSING,
   * at that step and attempt), in one cheap statement: a late report changes nothing. True when stored.
   */
  async recordStepState(step: RunningStep, state: Pick<NewCommandRow, 'processingStage' | 'progress'>): Promise<boolean> {
    const stored = await this.db.update(commands).set(state).where(isRunning(step)).returning({ id: commands.id });
    return stored.length > 0;
  }

  /**
   * Records that the account asks to cancel its command, if the command is still QUEUED or PROCESSING,
   * and notifies COMMAND_CANCEL_CHANNEL in the same statement (delivered on commit). Null when the
   * account has no such command.
   */
  async requestCancel(id: string, accountId: string, now: Date): Promise<CancelRequest | null> {
    const result = await this.db.execute(sql`
      with requested as (
        update commands set cancel_requested_at = coalesce(cancel_requested_at, ${now.toISOString()}::timestamptz)
        where id = ${id} and account_id = ${accountId} and status in (${CommandStatus.QUEUED}, ${CommandStatus.PROCESSING})
        returning id
      )
      select pg_notify(${COMMAND_CANCEL_CHANNEL}, id::text) from requested`);
    if (rowsOf(result).length > 0) return { requested: true };
    const [row] = await this.db
      .select({ status: commands.status })
      .from(commands)
      .where(and(eq(commands.id, id), eq(commands.accountId, accountId)));
    return row ? { requested: false, endedWith: row.status } : null;
  }

  /**
   * Starts a command that is still QUEUED, in one statement: its row as started, or null when it is
   * not QUEUED any more. It runs the step it waits at (the first; or the one it was sent back to the
   * queue at) as a new attempt, so its job's name is new; the first start's time is kept.
   */
  async startQueued(id: string, patch: Pick<NewCommandRow, 'processingStage'>, now: Date): Promise<CommandRow | null> {
    const [row] = await this.db
      .update(commands)
      .set({
        ...patch,
        status: CommandStatus.PROCESSING,
        attempt: sql`${commands.attempt} + 1`,
        startedAt: sql`coalesce(${commands.startedAt}, ${now.toISOString()}::timestamptz)`,
        stepStartedAt: now,
        queueReason: null,
      })
      .where(and(eq(commands.id, id), eq(commands.status, CommandStatus.QUEUED)))
      .returning();
    return row ?? null;
  }

  /**
   * Kueue mode: hands a QUEUED command's step to the cluster's queue (its Job is then made suspended),
   * in one statement, as a new attempt. It stays QUEUED, and counts against its plan from now on. Null
   * when it is not QUEUED any more (or was handed over already).
   */
  async queueInCluster(id: string): Promise<CommandRow | null> {
    const [row] = await this.db
      .update(commands)
      .set({ inClusterQueue: true, attempt: sql`${commands.attempt} + 1`, queueReason: null })
      .where(and(eq(commands.id, id), eq(commands.status, CommandStatus.QUEUED), eq(commands.inClusterQueue, false)))
      .returning();
    return row ?? null;
  }

  /** Kueue mode: the cluster's queue resumed this step's Job; the command runs. Its row, or null if it did not wait for that Job. */
  async startReleased(step: RunningStep, now: Date): Promise<CommandRow | null> {
    const [row] = await this.db
      .update(commands)
      .set({
        status: CommandStatus.PROCESSING,
        inClusterQueue: false,
        processingStage: ProcessingStage.DOWNLOADING,
        startedAt: sql`coalesce(${commands.startedAt}, ${now.toISOString()}::timestamptz)`,
        stepStartedAt: now,
      })
      .where(
        and(
          eq(commands.id, step.commandId),
          eq(commands.status, CommandStatus.QUEUED),
          eq(commands.inClusterQueue, true),
          eq(commands.currentStep, step.step),
          eq(commands.attempt, step.attempt),
        ),
      )
      .returning();
    return row ?? null;
  }

  /**
   * Sends a running step's command back to the queue (cluster mode: its pod found no node), if that
   * step still runs. It keeps its place (its seq) and its step; true when it was sent back.
   */
  async requeue(step: RunningStep, reason: string, o: { inClusterQueue: boolean } = { inClusterQueue: false }): Promise<boolean> {
    const rows = await this.db
      .update(commands)
      .set({
        status: CommandStatus.QUEUED,
        processingStage: null,
        progress: null,
        queueReason: reason,
        inClusterQueue: o.inClusterQueue,
        // It waits again: its queued seconds run to its next start.
        stepStartedAt: null,
      })
      .where(isRunning(step))
      .returning({ id: commands.id });
    return rows.length > 0;
  }

  async update(id: string, patch: Partial<NewCommandRow>): Promise<void> {
    await this.db.update(commands).set(patch).where(eq(commands.id, id));
  }

  /**
   * Records a finished step, if it still runs (as recordStepState): its output files and the command's
   * next state, together. False when the command moved on meanwhile (cancelled): nothing is stored.
   */
  async completeStep(step: RunningStep, outputs: NewFileRow[], patch: Partial<NewCommandRow>): Promise<boolean> {
    // One statement, not a transaction of four round trips (BEGIN, the update, the insert, COMMIT):
    // the files are inserted only if the update found the step still running.
    const update = this.db.update(commands).set(patch).where(isRunning(step)).returning({ id: commands.id });
    const result = await this.db.execute(sql`
      with step as (${update.getSQL()}), stored as (${insertFilesIf(sql`exists (select 1 from step)`, outputs)})
      select count(*)::int as updated from step`);
    return rowsOf<{ updated: number }>(result)[0].updated > 0;
  }
}

/** Upserts `rows` (a step that ran again after a restart overwrites its earlier record) when `condition` holds. */
function insertFilesIf(condition: SQL, rows: NewFileRow[]): SQL {
  if (rows.length === 0) return sql`select 1`;
  const { statement, names } = insertRowsWhere(files, rows, condition);
  const updates = names.filter((name) => name !== 'id').map((name) => sql`${sql.identifier(name)} = excluded.${sql.identifier(name)}`);
  return sql`${statement} on conflict (id) do update set ${sql.join(updates, sql`, `)} returning id`;
}

/** The command is PROCESSING, at this step and attempt. */
function isRunning(step: RunningStep): SQL | undefined {
  return and(
    eq(commands.id, step.commandId),
    eq(commands.status, CommandStatus.PROCESSING),
    eq(commands.currentStep, step.step),
    eq(commands.attempt, step.attempt),
  );
}

/**
 * QUEUED commands that fit their account's plan next to what the account runs (see admissible), at
 * most `limit`, in the order they start (`turn`).
 */
function admissibleSql(limit: number): SQL {
  // An account's admissible commands are its oldest QUEUED ones, up to the first that does not fit
  // (vCPUs only add up), and no more than `limit` are taken in all: so each waiting account's first
  // `limit` are all that need ranking, whatever the queue's length. The accounts that wait are found
  // one index probe each (a skip scan of commands_queued_account_idx), not by reading the queue.
  // The status is written as a literal, not a parameter: a plan made for any parameter (PostgreSQL's
  // generic plans of prepared statements) could not use the partial index.
  const waitingHere = sql`c.status = ${sql.raw(`'${CommandStatus.QUEUED}'`)} and not c.in_cluster_queue`;
  return sql`
      with recursive waiting(account_id) as (
        (select c.account_id from commands c where ${waitingHere} order by c.account_id limit 1)
        union all
        select (select c.account_id from commands c where ${waitingHere} and c.account_id > w.account_id order by c.account_id limit 1)
        from waiting w where w.account_id is not null
      ), running as (
        select account_id, sum(vcpu_count) as used from commands
        where status = ${CommandStatus.PROCESSING} or (status = ${CommandStatus.QUEUED} and in_cluster_queue)
        group by account_id
      ), queued as (
        select c.id, c.account_id, c.seq, c.vcpu_count, p.max_vcpus, p.name as plan, p.priority, c.resource_created_at,
               sum(c.vcpu_count) over (partition by c.account_id order by c.seq) as cumulative
        from waiting w join accounts a on a.id = w.account_id join plans p on p.name = a.plan
        cross join lateral (
          select c.id, c.account_id, c.seq, c.vcpu_count, c.resource_created_at from commands c
          where ${waitingHere} and c.account_id = w.account_id order by c.seq limit ${limit}
        ) c
      )
      select q.id, q.account_id, q.vcpu_count, q.max_vcpus, q.plan, q.resource_created_at,
             row_number() over (order by q.priority desc, q.seq) as turn
      from queued q left join running r on r.account_id = q.account_id
      where ${VCPUS.allowsSql(sql`q.cumulative + coalesce(r.used, 0)`, sql`q.max_vcpus`)}
      order by q.priority desc, q.seq limit ${limit}`;
}

/** A json column: parsed by the driver (PGlite, postgres.js), or its text. */
function parsedJson(value: unknown): unknown[] {
  return (typeof value === 'string' ? JSON.parse(value) : value) as unknown[];
}

/** The PROCESSING rows of runningAndAdmissible, as activeWith maps them. */
function runningCommandsOf(rows: unknown[]): ProcessingCommand[] {
  type Row = {
    id: string;
    account_id: string;
    status: CommandStatus;
    vcpu_count: number;
    current_step: number;
    attempt: number;
    step_retries: number;
    in_cluster_queue: boolean;
    ffmpeg_seconds: number;
    processed_bytes: number | string;
    resource_created_at: string | null;
    finishing: boolean;
  };
  return (rows as Row[]).map((r) => ({
    id: r.id,
    accountId: r.account_id,
    status: r.status,
    vcpuCount: Number(r.vcpu_count),
    currentStep: Number(r.current_step),
    attempt: Number(r.attempt),
    stepRetries: Number(r.step_retries),
    inClusterQueue: r.in_cluster_queue,
    ffmpegSeconds: Number(r.ffmpeg_seconds),
    processedBytes: Number(r.processed_bytes),
    resourceCreatedAt: r.resource_created_at === null ? null : new Date(r.resource_created_at),
    finishing: r.finishing,
  }));
}

function queuedCommandsOf(result: unknown): QueuedCommand[] {
  type Row = {
    id: string;
    account_id: string;
    vcpu_count: number;
    max_vcpus: number;
    plan: string;
    resource_created_at: string | Date | null;
  };
  return rowsOf<Row>(result).map((r) => ({
    id: r.id,
    accountId: r.account_id,
    vcpuCount: Number(r.vcpu_count),
    planMaxVcpus: Number(r.max_vcpus),
    plan: r.plan,
    resourceCreatedAt: r.resource_created_at === null ? null : new Date(r.resource_created_at),
  }));
}
