// client-node informers stop on some errors (and after a watch ends badly); this keeps one running:
// restart with backoff, which relists (so a 410 Gone resourceVersion is recovered by a fresh list).
import {
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ListPromise,
  type ObjectCache,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface KeptInformer<T extends KubernetesObject> {
  informer: Informer<T> & ObjectCache<T>;
  /** Resolves after the first successful list. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

/**
 * `trim`, if given, cuts each object down in place before the informer's cache keeps it (list items
 * and watch events alike): for kinds of which only the identity is needed, the cache then holds no
 * spec, status or managedFields.
 */
export function keepInformer<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  list: ListPromise<T>,
  labelSelector: string | undefined,
  logger: Logger,
  trim?: (obj: T) => void,
): KeptInformer<T> {
  const informer = makeInformer<T>(
    kc,
    path,
    trim
      ? async () => {
          const result = await list();
          result.items.forEach(trim);
          return result;
        }
      : list,
    labelSelector,
  );
  // The cache keeps the very object it hands to its handlers, and this handler is the first one.
  if (trim) {
    informer.on('add', trim);
    informer.on('update', trim);
  }
  let stopped = false;
  const backoff = new RestartBackoff();
  let markSynced: () => void = () => {};
  const synced = new Promise<void>((resolve) => (markSynced = resolve));
  const start = () => {
    if (stopped) return;
    informer.start().then(
      () => {
        backoff.started(Date.now());
        markSynced();
      },
      (err) => scheduleRestart(err),
    );
  };
  const scheduleRestart = (err: unknown) => {
    if (stopped) return;
    const delayMs = backoff.nextDelay(Date.now());
    logger.warn({ err: (err as Error)?.message ?? String(err), path, backoff_ms: delayMs }, 'watch stopped, restarting');
    setTimeout(start, delayMs).unref();
  };
  informer.on('error', scheduleRestart);
  start();
  return {
    informer,
    synced,
    stop: async () => {
      stopped = true;
      await informer.stop();
    },
  };
}

/**
 * Restart delays, doubling from 200 ms to 10 s. A successful start is the list only: a watch that is
 * then refused (403, a missing RBAC rule) fails at once. So the delay goes back to 200 ms only after a
 * run that stayed up for a minute, not after every list, or such a watch would restart five times a second.
 */
export class RestartBackoff {
  static readonly MIN_MS = 200;
  static readonly MAX_MS = 10_000;
  static readonly HEALTHY_RUN_MS = 60_000;
  private delayMs = RestartBackoff.MIN_MS;
  private upSince: number | null = null;

  started(now: number): void {
    this.upSince = now;
  }

  nextDelay(now: number): number {
    if (this.upSince !== null && now - this.upSince >= RestartBackoff.HEALTHY_RUN_MS) this.delayMs = RestartBackoff.MIN_MS;
    this.upSince = null;
    const delay = this.delayMs;
    this.delayMs = Math.min(delay * 2, RestartBackoff.MAX_MS);
    return delay;
  }
}

/** Keeps what identifies an object and what the informer compares (resourceVersion); drops the rest. */
export function keepIdentityOnly(obj: KubernetesObject): void {
  const m = obj.metadata;
  const kept = m && {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    labels: m.labels,
    deletionTimestamp: m.deletionTimestamp,
  };
  for (const key of Object.keys(obj)) if (key !== 'apiVersion' && key !== 'kind') delete (obj as Record<string, unknown>)[key];
  if (kept) obj.metadata = kept;
}

/**
 * A list in pages of `pageSize` (one consistent snapshot, continue tokens), each page trimmed before
 * the next is read: a list of many large objects never holds them all whole at once.
 */
export function pagedList<T extends KubernetesObject>(
  page: (cont: string | undefined, limit: number) => Promise<KubernetesListObject<T>>,
  trim: (obj: T) => void,
  pageSize = 500,
): ListPromise<T> {
  return async () => {
    const items: T[] = [];
    let cont: string | undefined;
    let last: KubernetesListObject<T>;
    do {
      last = await page(cont, pageSize);
      last.items.forEach(trim);
      items.push(...last.items);
      cont = last.metadata?._continue || undefined;
    } while (cont);
    // Every page carries the snapshot's resourceVersion: the watch starts from there.
    return { ...last, items, metadata: { ...last.metadata, _continue: undefined } };
  };
}
