// Two operator replicas never both act: the one holding the Lease leads. Crash-only on loss: a
// replica that cannot renew stops acting (the caller exits; Kubernetes restarts it as a follower).
import { CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface LeaderElectionOptions {
  kubeconfig: KubeConfig;
  namespace: string;
  name: string;
  identity: string;
  leaseSeconds?: number;
  renewSeconds?: number;
  logger: Logger;
  clock?: () => Date;
}

export interface Leadership {
  /** Resolves once this replica leads. */
  acquired: Promise<void>;
  /** Resolves if leadership is lost after it was acquired. */
  lost: Promise<void>;
  stop(): Promise<void>;
}

/** Lease times are MicroTime: the API server wants six fractional digits, JavaScript gives three. */
function microTime(d: Date): Date {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;
}

export function electLeader(o: LeaderElectionOptions): Leadership {
  const api = o.kubeconfig.makeApiClient(CoordinationV1Api);
  const clock = o.clock ?? (() => new Date());
  const leaseSeconds = o.leaseSeconds ?? 15;
  // Renew well within the lease, or a follower may find it expired between two renewals.
  const renewMs = (o.renewSeconds ?? leaseSeconds / 3) * 1000;
  let stopped = false;
  let leading = false;
  let timer: NodeJS.Timeout | null = null;
  let onAcquired: () => void = () => {};
  let onLost: () => void = () => {};
  const acquired = new Promise<void>((r) => (onAcquired = r));
  const lost = new Promise<void>((r) => (onLost = r));

  const spec = (now: Date, prev?: V1Lease) => ({
    holderIdentity: o.identity,
    leaseDurationSeconds: leaseSeconds,
    acquireTime: microTime(prev?.spec?.holderIdentity === o.identity && prev.spec.acquireTime ? new Date(prev.spec.acquireTime) : now),
    renewTime: microTime(now),
    leaseTransitions: (prev?.spec?.leaseTransitions ?? 0) + (prev?.spec?.holderIdentity === o.identity ? 0 : 1),
  });

  const attempt = async (): Promise<boolean> => {
    const now = clock();
    let lease: V1Lease | null = null;
    try {
      lease = await api.readNamespacedLease({ name: o.name, namespace: o.namespace });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
    if (!lease) {
      await api.createNamespacedLease({
        namespace: o.namespace,
        body: { metadata: { name: o.name, namespace: o.namespace }, spec: spec(now) },
      });
      return true;
    }
    const holder = lease.spec?.holderIdentity;
    const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
    const expired = renewed + (lease.spec?.leaseDurationSeconds ?? leaseSeconds) * 1000 < now.getTime();
    if (holder !== o.identity && !expired) return false;
    // resourceVersion makes this a compare-and-swap: of two replicas racing, one gets 409.
    await api.replaceNamespacedLease({ name: o.name, namespace: o.namespace, body: { ...lease, spec: spec(now, lease) } });
    return true;
  };

  const tick = async () => {
    if (stopped) return;
    let ok = false;
    try {
      // A renewal that hangs counts as failed: a leader must not act on a lease it may have lost.
      ok = await Promise.race([attempt(), new Promise<boolean>((r) => setTimeout(() => r(false), renewMs).unref())]);
    } catch (err) {
      o.logger.warn({ err: (err as Error).message, identity: o.identity }, 'lease update failed');
    }
    if (ok && !leading) {
      leading = true;
      o.logger.info({ identity: o.identity }, 'leading');
      onAcquired();
    } else if (!ok && leading) {
      leading = false;
      o.logger.warn({ identity: o.identity }, 'lost the lease');
      onLost();
      return;
    }
    timer = setTimeout(() => void tick(), leading ? renewMs : renewMs / 2);
  };
  void tick();

  return {
    acquired,
    lost,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (!leading) return;
      leading = false;
      // Release on stop, so a successor need not wait for the lease to expire.
      try {
        const lease = await api.readNamespacedLease({ name: o.name, namespace: o.namespace });
        if (lease.spec?.holderIdentity === o.identity) {
          await api.replaceNamespacedLease({
            name: o.name,
            namespace: o.namespace,
            body: { ...lease, spec: { ...lease.spec, holderIdentity: '', renewTime: microTime(new Date(0)) } },
          });
        }
      } catch (err) {
        o.logger.warn({ err: (err as Error).message }, 'could not release the lease');
      }
    },
  };
}
