// client-node informers stop on some errors (and after a watch ends badly); this keeps one running:
// restart with backoff, which relists (so a 410 Gone resourceVersion is recovered by a fresh list).
import { makeInformer, type Informer, type KubeConfig, type KubernetesObject, type ListPromise, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface KeptInformer<T extends KubernetesObject> {
  informer: Informer<T> & ObjectCache<T>;
  /** Resolves after the first successful list. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

export function keepInformer<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  list: ListPromise<T>,
  labelSelector: string | undefined,
  logger: Logger,
): KeptInformer<T> {
  const informer = makeInformer<T>(kc, path, list, labelSelector);
  let stopped = false;
  let backoffMs = 200;
  let markSynced: () => void = () => {};
  const synced = new Promise<void>((resolve) => (markSynced = resolve));
  const start = () => {
    if (stopped) return;
    informer.start().then(
      () => {
        backoffMs = 200;
        markSynced();
      },
      (err) => scheduleRestart(err),
    );
  };
  const scheduleRestart = (err: unknown) => {
    if (stopped) return;
    logger.warn({ err: (err as Error)?.message ?? String(err), path, backoff_ms: backoffMs }, 'watch stopped, restarting');
    setTimeout(start, backoffMs).unref();
    backoffMs = Math.min(backoffMs * 2, 10_000);
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
