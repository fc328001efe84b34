// PGlite runs every query on this thread, and a finished query hands its lock to the next queued one
// as a microtask: under load, queries ran back to back without the event loop turning, so no request
// was read meanwhile and a poll answered from memory waited as long as a submit (80 ms and more in a
// burst of submits). Here queries and transactions wait in a queue, and each starts only after the
// previous one has ended and the event loop has turned once (requests that arrived meanwhile are read).
//
// The queue has two lanes. A poll whose command changed must read it again; behind a burst's submits
// that read waited for all of theirs (15-40 ms). The client returned queries in the lane that goes
// first: it waits for the query that is running, not for the queue. Never twice in a row while the
// other lane waits, so a flood of such reads (list requests) slows the other work to half, no more.
import type { PGlite } from '@electric-sql/pglite';

interface Waiting {
  run: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Puts `client`'s queries, execs and transactions in the queue; returns a client of the same database
 * whose queries go ahead of those waiting (for short reads that someone waits on).
 */
export function takeTurnsWithRequests(client: PGlite): PGlite {
  const ahead: Waiting[] = [];
  const behind: Waiting[] = [];
  let busy = false;
  let aheadLast = false;

  const next = (): void => {
    aheadLast = ahead.length > 0 && (!aheadLast || behind.length === 0);
    const waiting = aheadLast ? ahead.shift() : behind.shift();
    if (!waiting) {
      busy = false;
      return;
    }
    busy = true;
    setImmediate(() => {
      waiting.run().then(waiting.resolve, waiting.reject).finally(next);
    });
  };
  const queued =
    (lane: Waiting[]) =>
    <T>(run: () => Promise<T>): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        lane.push({ run, resolve: resolve as (value: unknown) => void, reject });
        if (!busy) next();
      });

  const query = client.query.bind(client);
  const exec = client.exec.bind(client);
  const transaction = client.transaction.bind(client);
  /** Makes `target`'s query methods run `client`'s through `lane`. */
  const routeThrough = (target: PGlite, lane: Waiting[]): void => {
    const enqueue = queued(lane);
    target.query = ((...args: Parameters<typeof query>) => enqueue(() => query(...args))) as typeof client.query;
    target.exec = (...args: Parameters<typeof exec>) => enqueue(() => exec(...args));
    target.transaction = ((...args: Parameters<typeof transaction>) => enqueue(() => transaction(...args))) as typeof client.transaction;
  };
  routeThrough(client, behind);
  // The same client underneath (its other members through the prototype), with its own query methods.
  const aheadClient = Object.create(client) as PGlite;
  routeThrough(aheadClient, ahead);
  return aheadClient;
}
