// PGlite runs every query on this thread, and a finished query hands its lock to the next queued one
// as a microtask: under load, queries ran back to back without the event loop turning, so no request
// was read meanwhile and a poll answered from memory waited as long as a submit (80 ms and more in a
// burst of submits). Here queries and transactions wait in one queue, and each starts only after the
// previous one has ended and the event loop has turned once (requests that arrived meanwhile are read).
import type { PGlite } from '@electric-sql/pglite';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export function takeTurnsWithRequests(client: PGlite): void {
  let previous: Promise<unknown> = Promise.resolve();
  const queued = <T>(run: () => Promise<T>): Promise<T> => {
    const mine = previous.then(turn).then(run);
    previous = mine.catch(() => {});
    return mine;
  };
  const query = client.query.bind(client);
  const exec = client.exec.bind(client);
  const transaction = client.transaction.bind(client);
  client.query = ((...args: Parameters<typeof query>) => queued(() => query(...args))) as typeof client.query;
  client.exec = (...args: Parameters<typeof exec>) => queued(() => exec(...args));
  client.transaction = ((...args: Parameters<typeof transaction>) => queued(() => transaction(...args))) as typeof client.transaction;
}
