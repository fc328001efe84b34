// A list-then-watch loop that never gives up: every time the watch ends (the API server closes
// watches after --min-request-timeout), fails, or reports an ERROR event (e.g. 410 Gone), it waits
// a moment, lists again and watches from the new list's resourceVersion. The informer of
// @kubernetes/client-node stops for good on errors, which a long test run cannot afford.
import { Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type AgentLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface ListWatchOptions<T extends KubernetesObject> {
  kubeconfig: KubeConfig;
  /** Collection path, e.g. /api/v1/pods or /api/v1/namespaces/x/pods. */
  path: string;
  fieldSelector?: string;
  list(): Promise<KubernetesListObject<T>>;
  /** The full state after each (re)list; events follow through onEvent. */
  onList(items: T[]): void;
  onEvent(type: WatchEventType, obj: T): void;
  logger: AgentLogger;
  retryDelayMs?: number;
}

export interface ListWatch {
  stop(): Promise<void>;
}

export function startListWatch<T extends KubernetesObject>(opts: ListWatchOptions<T>): ListWatch {
  const watch = new Watch(opts.kubeconfig);
  const retryDelayMs = opts.retryDelayMs ?? 500;
  const stopping = new AbortController();
  let endCurrentWatch: (() => void) | undefined;

  // Resolves when this one watch request is over, whatever the reason.
  function watchOnce(resourceVersion: string | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      let request: AbortController | undefined;
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        endCurrentWatch = undefined;
        request?.abort();
        resolve();
      };
      endCurrentWatch = end;
      const onEvent = (type: string, obj: T) => {
        if (ended) return;
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') opts.onEvent(type, obj);
        else if (type === 'ERROR') {
          opts.logger.warn({ path: opts.path, status: obj }, 'watch reported an error; relisting');
          end();
        }
      };
      const onDone = (err: unknown) => {
        if (err && !ended && !stopping.signal.aborted)
          opts.logger.warn({ path: opts.path, err: err instanceof Error ? err.message : JSON.stringify(err) }, 'watch failed');
        end();
      };
      const params = { resourceVersion, fieldSelector: opts.fieldSelector, allowWatchBookmarks: true };
      watch.watch(opts.path, params, onEvent, onDone).then((controller) => {
        request = controller;
        if (ended) controller.abort();
      }, onDone);
    });
  }

  async function run(): Promise<void> {
    while (!stopping.signal.aborted) {
      try {
        const list = await opts.list();
        if (stopping.signal.aborted) break;
        opts.onList(list.items);
        await watchOnce(list.metadata?.resourceVersion);
      } catch (err) {
        if (!stopping.signal.aborted) opts.logger.warn({ path: opts.path, err: String(err) }, 'list failed');
      }
      await sleep(retryDelayMs, stopping.signal);
    }
  }

  const running = run();
  return {
    async stop() {
      stopping.abort();
      endCurrentWatch?.();
      await running;
    },
  };
}

/** Waits ms, or less if the signal aborts first; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
