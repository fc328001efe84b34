// PGlite runs every parameterised query as six protocol round trips into its WASM backend (parse,
// describe, bind, describe, execute, sync), and PostgreSQL parses and plans the text afresh each time:
// a large part of the embedded service's own CPU per command. postgres.js prepares each statement once per
// connection; this does the same for PGlite. The first run of a text prepares it under a name and keeps
// its parameter types and row description; every later run is Bind, Execute and Sync in one call, and
// PostgreSQL plans it as it does any prepared statement (custom plans first, a generic plan once it is
// no worse). The rows are parsed by PGlite's own parser, with the row description kept.
import { parse, protocol, type PGlite, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite';

type BackendMessage = Awaited<ReturnType<PGlite['execProtocol']>>['messages'][number];

/** Statements kept; the oldest is closed when a new one would make more (distinct texts are few). */
export const MAX_STATEMENTS = 200;

interface Prepared {
  name: string;
  paramTypes: number[];
  /** null: the statement returns no rows (an INSERT without RETURNING). */
  rowDescription: BackendMessage | null;
}

export interface StatementCache {
  /** Runs `text` as PGlite's query() would (`tx.query` in a transaction), through a prepared statement. */
  query<T>(text: string, params: unknown[] | undefined, options: QueryOptions | undefined, inTransaction: boolean): Promise<Results<T>>;
  /** Statements prepared now (for tests). */
  readonly size: number;
}

/** A table under a kept statement changed the statement's columns: it is prepared again. */
const isStale = (err: unknown) =>
  (err as { code?: unknown }).code === '0A000' && /cached plan must not change result type/.test((err as Error).message);

/** Statement names are unique in the process, so two caches over one client cannot collide. */
let made = 0;

export function createStatementCache(client: PGlite, max = MAX_STATEMENTS): StatementCache {
  const { serialize } = protocol;
  const prepared = new Map<string, Prepared>();

  // Each call's own writes are synced once at the end of the query, as PGlite's query() does.
  const run = (...messages: Uint8Array[]) => client.execProtocol(concat(messages), { syncToFs: false });

  async function prepare(text: string): Promise<Prepared> {
    if (prepared.size >= max) {
      const [oldestText, oldest] = prepared.entries().next().value!;
      prepared.delete(oldestText);
      await run(serialize.close({ type: 'S', name: oldest.name }), serialize.sync());
    }
    const name = `ffop_${++made}`;
    const { messages } = await run(serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync());
    const params = messages.find((m) => m.name === 'parameterDescription') as { dataTypeIDs: number[] } | undefined;
    const statement = {
      name,
      paramTypes: params?.dataTypeIDs ?? [],
      rowDescription: messages.find((m) => m.name === 'rowDescription') ?? null,
    };
    prepared.set(text, statement);
    return statement;
  }

  async function execute<T>(text: string, params: unknown[], options: QueryOptions | undefined): Promise<Results<T>> {
    const statement = prepared.get(text) ?? (await prepare(text));
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = options?.serializers?.[statement.paramTypes[i]] ?? client.serializers[statement.paramTypes[i]];
      // As PGlite's query(): a type without a serializer is sent as the value's own text.
      return serializer ? serializer(value) : (value as { toString(): string }).toString();
    });
    try {
      const { messages } = await run(serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync());
      const rows = statement.rowDescription ? [statement.rowDescription, ...messages] : messages;
      return parse.parseResults(rows, client.parsers, options)[0] as Results<T>;
    } catch (err) {
      if (isStale(err)) {
        prepared.delete(text);
        await run(serialize.close({ type: 'S', name: statement.name }), serialize.sync()).catch(() => {});
      }
      throw err;
    }
  }

  return {
    get size() {
      return prepared.size;
    },
    async query<T>(text: string, params: unknown[] = [], options: QueryOptions | undefined, inTransaction: boolean) {
      // PGlite's own locks: one query at a time, and outside a transaction none of one's queries in between.
      const once = () =>
        client._runExclusiveQuery(async () => {
          try {
            return await execute<T>(text, params, options);
          } catch (err) {
            // As PGlite's query() reports a failed statement: with its text and parameters.
            if (err instanceof Error && 'code' in err) Object.assign(err, { query: text, params, queryOptions: options });
            throw err;
          } finally {
            if (!inTransaction) await client.syncToFs();
          }
        });
      if (inTransaction) return once();
      await client._checkReady();
      return client._runExclusiveTransaction(async () => {
        try {
          return await once();
        } catch (err) {
          // Outside a transaction nothing else was done: the statement, prepared again, runs once more.
          if (!isStale(err)) throw err;
          return once();
        }
      });
    },
  };
}

/**
 * Makes `client.query`, and `query` of the transactions it starts, run through prepared statements.
 * Queries with options this does not handle (a blob, parameter types given) go to PGlite's own.
 */
export function cacheStatements(client: PGlite, max = MAX_STATEMENTS): void {
  const cache = createStatementCache(client, max);
  const through =
    (own: PGlite['query'], inTransaction: boolean): PGlite['query'] =>
    <T>(text: string, params?: unknown[], options?: QueryOptions) =>
      options?.blob !== undefined || options?.paramTypes !== undefined
        ? own<T>(text, params, options)
        : cache.query<T>(text, params, options, inTransaction);
  client.query = through(client.query.bind(client), false);
  const transaction = client.transaction.bind(client);
  client.transaction = <T>(callback: (tx: Transaction) => Promise<T>) =>
    transaction((tx) => {
      const own = tx.query.bind(tx);
      const cached = through(own, true);
      // A closed transaction's query fails as PGlite's does.
      tx.query = (<R>(text: string, params?: unknown[], options?: QueryOptions) =>
        tx.closed ? own<R>(text, params, options) : cached<R>(text, params, options)) as Transaction['query'];
      return callback(tx);
    });
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
