// Submits that arrive together are stored together, in one statement of up to MAX_BATCH rows: a
// statement per submit (its parse, plan, commit and round trip) becomes one per batch, about a tenth
// of the database's work per submit in batches of 20, on PGlite as on PostgreSQL.
//
// Which submits are together: submits' bodies are checked one per turn of the event loop
// (api/schemas/event-loop-turns.ts), so those of a burst reach the store one per turn. A new batch
// therefore waits while submits keep joining it, turn after turn, and goes once a turn has passed
// with none, or after MAX_GATHER_MS. A lone submit waits a single turn. While a batch is being stored,
// the next submits of the account wait for it, then gather in the same way (storing at once what came
// meanwhile would settle into one row per statement: one body is checked while one statement runs).
import { QuotaUsedUp, sameColumnsKey, type CommandRow, type NewCommandQuotas, type NewCommandRow } from './commands-repo.ts';

/** Most commands stored by one statement. */
export const MAX_BATCH = 100;
/** Longest a batch waits for more submits to join it. */
export const MAX_GATHER_MS = 10;

/** Stores rows of one account that leave out the same columns, all or none (CommandsRepo.insertMany). */
export type InsertMany = (rows: NewCommandRow[], quotas: NewCommandQuotas) => Promise<CommandRow[]>;

interface Waiting {
  row: NewCommandRow;
  resolve: (stored: CommandRow) => void;
  reject: (err: unknown) => void;
}

interface Lane {
  quotas: NewCommandQuotas;
  waiting: Waiting[];
  /** A batch is gathering or being stored: new rows wait for it. */
  busy: boolean;
  /** A row joined since the last turn. */
  joined: boolean;
}

export class InsertBatcher {
  private readonly insertMany: InsertMany;
  private readonly maxGatherMs: number;
  /** One lane per account, quota limits and set of columns: rows of one lane can share a statement. */
  private readonly lanes = new Map<string, Lane>();

  constructor(insertMany: InsertMany, o: { maxGatherMs?: number } = {}) {
    this.insertMany = insertMany;
    this.maxGatherMs = o.maxGatherMs ?? MAX_GATHER_MS;
  }

  /** Stores `row` within the account's quotas (as CommandsRepo.insert), with whatever else waits in its lane. */
  insert(row: NewCommandRow, quotas: NewCommandQuotas): Promise<CommandRow> {
    const key = `${JSON.stringify(quotas)} ${sameColumnsKey(row)}`;
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { quotas, waiting: [], busy: false, joined: false }));
    const stored = new Promise<CommandRow>((resolve, reject) => lane.waiting.push({ row, resolve, reject }));
    lane.joined = true;
    if (!lane.busy) {
      lane.busy = true;
      this.gather(key, lane, performance.now());
    }
    return stored;
  }

  /**
   * Waits a turn; stores the batch once a turn went by with nobody joining, it is full, or it waited
   * long enough. Then the rows that came meanwhile gather in the same way, or the lane is forgotten.
   */
  private gather(key: string, lane: Lane, since: number): void {
    lane.joined = false;
    setImmediate(() => {
      if (lane.joined && lane.waiting.length < MAX_BATCH && performance.now() - since < this.maxGatherMs) {
        return this.gather(key, lane, since);
      }
      void this.store(lane.waiting.splice(0, MAX_BATCH), lane.quotas).then(() => {
        if (lane.waiting.length > 0) return this.gather(key, lane, performance.now());
        lane.busy = false;
        this.lanes.delete(key);
      });
    });
  }

  private async store(batch: Waiting[], quotas: NewCommandQuotas): Promise<void> {
    try {
      const stored = await this.insertMany(
        batch.map((w) => w.row),
        quotas,
      );
      batch.forEach((w, i) => w.resolve(stored[i]));
    } catch (err) {
      // No room: each of them alone would have been refused by the same reading of the quotas.
      if (batch.length === 1 || err instanceof QuotaUsedUp) {
        for (const w of batch) w.reject(err);
        return;
      }
      // Something about one row (or the moment) failed them all: each is tried alone and gets its own answer.
      await Promise.all(batch.map((w) => this.store([w], quotas)));
    }
  }
}
