// Poll records from memory. A client polls its command many times while it waits; the database is
// read again only after the command or one of its output files changed. Every writer, whichever
// process it runs in (this one, the operator, another API replica), makes the database notify the
// change on commit (triggers of migration 0004), and the cache forgets what the notification names.
import type { Database } from '../db/database.ts';
import { endsAtSubmit, insertEndedAtSubmit } from './ended-at-submit.ts';
import { InsertBatcher } from './insert-batcher.ts';
import { CommandsRepo, type CommandWithOutputs, type NewCommandQuotas, type NewCommandRow } from './commands-repo.ts';

export const COMMAND_CHANGED_CHANNEL = 'ffop_command_changed';

interface Entry {
  value: CommandWithOutputs;
  expires: number;
}

interface Load {
  promise: Promise<CommandWithOutputs | null>;
  /** A change was notified while this read ran: its result may predate the change. */
  stale: boolean;
}

export interface PollCacheOptions {
  maxEntries?: number;
  /** A safety net only: notifications are what keeps entries current. */
  ttlMs?: number;
  clock?: () => number;
}

export class PollCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loads = new Map<string, Load>();
  private readonly maxEntries: number;
  private readonly ttlMs: number;
  private readonly clock: () => number;

  constructor(o: PollCacheOptions = {}) {
    this.maxEntries = o.maxEntries ?? 2_000;
    this.ttlMs = o.ttlMs ?? 60_000;
    this.clock = o.clock ?? Date.now;
  }

  /**
   * The command with its outputs, if it belongs to `accountId`. `load` reads it by id, whatever its
   * account; concurrent reads of one id share one load.
   */
  async read(accountId: string, id: string, load: () => Promise<CommandWithOutputs | null>): Promise<CommandWithOutputs | null> {
    const value = await this.readAny(id, load);
    return value?.row.accountId === accountId ? value : null;
  }

  /**
   * Many commands (a page of the list), each as `read` would give it: those not in memory are read
   * together by one `loadMany`, and kept as single reads are. Null where a command is gone or is
   * another account's.
   */
  async readMany(
    accountId: string,
    ids: string[],
    loadMany: (ids: string[]) => Promise<Map<string, CommandWithOutputs>>,
  ): Promise<(CommandWithOutputs | null)[]> {
    const missing = ids.filter((id) => !this.fresh(id) && !this.loading(id));
    let batch: Promise<Map<string, CommandWithOutputs>> | null = null;
    const fromBatch = (id: string) => {
      batch ??= loadMany(missing);
      return batch.then((found) => found.get(id) ?? null);
    };
    const values = await Promise.all(ids.map((id) => this.readAny(id, () => fromBatch(id))));
    return values.map((value) => (value?.row.accountId === accountId ? value : null));
  }

  /**
   * A new command: `write` stores it and returns it with its (no) outputs, which is kept as a read's
   * result would be. Its first poll, often right after the submit, then needs no read.
   */
  async created(id: string, write: () => Promise<CommandWithOutputs>): Promise<void> {
    await this.readAny(id, write);
  }

  /** The command `id` changed (or a file of it): the next read goes to the database. */
  changed(id: string): void {
    this.entries.delete(id);
    const running = this.loads.get(id);
    if (running) running.stale = true;
  }

  /** Changes may have been missed: forget everything. */
  clear(): void {
    this.entries.clear();
    for (const running of this.loads.values()) running.stale = true;
  }

  get size(): number {
    return this.entries.size;
  }

  private fresh(id: string): boolean {
    const hit = this.entries.get(id);
    return hit !== undefined && hit.expires > this.clock();
  }

  private loading(id: string): boolean {
    const running = this.loads.get(id);
    return running !== undefined && !running.stale;
  }

  private async readAny(id: string, load: () => Promise<CommandWithOutputs | null>): Promise<CommandWithOutputs | null> {
    if (this.fresh(id)) return this.entries.get(id)!.value;
    this.entries.delete(id); // absent, or past its time
    if (this.loading(id)) return this.loads.get(id)!.promise;
    const mine: Load = { promise: load(), stale: false };
    this.loads.set(id, mine);
    try {
      const value = await mine.promise;
      if (value !== null && !mine.stale) this.store(id, value);
      return value;
    } finally {
      if (this.loads.get(id) === mine) this.loads.delete(id);
    }
  }

  private store(id: string, value: CommandWithOutputs): void {
    // Bounded: when full, the oldest entry goes (Map order is insertion order).
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(id, { value, expires: this.clock() + this.ttlMs });
  }
}

export interface WatchedPollCacheOptions extends PollCacheOptions {
  reads?: CommandsRepo;
  /** After the cache forgot a changed command: a read now gets the change (the event streams' hub). */
  onChanged?: (id: string) => void;
  /** After the cache was cleared (changes may have been missed). */
  onResync?: () => void;
}

/**
 * A poll cache kept current by the database's change notifications; `stop` ends the listening. New
 * commands are written through `commands`; the polls' reads go through `reads`, by default on the
 * database's handle for poll reads, ahead of the writes queued meanwhile (Database.pollReads).
 */
export async function watchedPollCache(database: Database, commands: CommandsRepo, o: WatchedPollCacheOptions = {}) {
  const cache = new PollCache(o);
  const reads = o.reads ?? new CommandsRepo(database.pollReads);
  const batcher = new InsertBatcher((rows, quotas) => commands.insertMany(rows, quotas));
  const stop = await database.listen(
    COMMAND_CHANGED_CHANNEL,
    (id) => {
      cache.changed(id);
      o.onChanged?.(id);
    },
    () => {
      cache.clear();
      o.onResync?.();
    },
  );
  return {
    cache,
    /** The poll path's read. */
    find: (accountId: string, id: string) => cache.read(accountId, id, () => reads.findWithOutputs(id)),
    /** A page of the account's commands, newest first (the list): ids from the database, the commands from memory where they are. */
    list: async (accountId: string, limit: number, offset: number): Promise<CommandWithOutputs[]> => {
      const ids = await reads.listIds(accountId, limit, offset);
      const found = await cache.readMany(accountId, ids, (missing) => reads.findManyWithOutputs(missing));
      return found.filter((value) => value !== null);
    },
    /**
     * The submit path's write, within the account's quotas: the new command is kept for its polls.
     * Submits that arrive together are stored in one statement (insert-batcher.ts).
     */
    insert: (row: NewCommandRow, quotas: NewCommandQuotas) =>
      cache.created(row.id, async () => ({
        row: endsAtSubmit(row) ? await insertEndedAtSubmit(database.db, row, quotas) : await batcher.insert(row, quotas),
        files: [],
      })),
    stop,
  };
}
