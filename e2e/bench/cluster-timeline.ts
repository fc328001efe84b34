// What the cluster benchmark sees of each command, without polling Kubernetes per command: one
// list+watch of the namespace's Jobs and one of its pods (e2e/cluster/list-watch.ts), one query of
// new runner results every 20 ms, and API polls only of commands whose run is ending.
// Every time is wall-clock milliseconds (Date.now(), the same clock as PostgreSQL's timestamps), taken
// when the event reaches this process:
//   jobCreated   the Job's ADDED watch event (not metadata.creationTimestamp: 1 s resolution)
//   podExited    the pod watch event that first carries the container's terminated state (the node
//                agent's status report; the kubelet's on a real node)
//   jobComplete  the Job watch event that first carries condition Complete=True (the Job controller's
//                verdict; status.completionTime has 1 s resolution)
//   resultStored the runner's result row in job_events (its created_at, set by PostgreSQL)
//   success      the first API answer (GET /v1/commands/:id) that says SUCCESS
import { BatchV1Api, CoreV1Api, type V1Job, type V1Pod } from '@kubernetes/client-node';
import postgres from 'postgres';
import { parseJobName } from '../../core/jobs/job-name.ts';
import { LABELS } from '../../core/k8s/names.ts';
import { startListWatch, type ListWatch } from '../cluster/list-watch.ts';
import type { ClusterService } from '../cluster/service-fixture.ts';

export interface CommandTimes {
  jobCreated?: number;
  podExited?: number;
  jobComplete?: number;
  resultStored?: number;
  success?: number;
  /** The first poll already answered SUCCESS: `success` is an upper bound. */
  successAtFirstPoll?: boolean;
  failed?: string;
}

export interface Timeline {
  times: Map<string, CommandTimes>;
  /** API requests made to see SUCCESS (to show how little the observer asks). */
  polls(): number;
  /** Resolves when every command in `ids` is SUCCESS or FAILED as the API answers. */
  allEnded(ids: string[], timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const POLL_MS = 20;

/** `key`: an API key of the account that submits the commands. */
export function startTimeline(svc: ClusterService, key: string): Timeline {
  const times = new Map<string, CommandTimes>();
  const of = (id: string) => {
    let t = times.get(id);
    if (!t) times.set(id, (t = {}));
    return t;
  };
  const api = svc.client(key);
  let polls = 0;
  const polling = new Set<string>();
  let stopped = false;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  // Polls one command's API record every 20 ms from the moment its run is seen ending until it ends.
  const watchForEnd = (id: string) => {
    const t = of(id);
    if (polling.has(id) || t.success || t.failed) return;
    polling.add(id);
    void (async () => {
      let first = true;
      while (!stopped) {
        polls++;
        const res = await api.get(`/v1/commands/${id}`).catch(() => null);
        if (!res) {
          await sleep(POLL_MS); // the API was busy or restarting: ask again
          continue;
        }
        const now = Date.now();
        const status = res.body?.status;
        if (status === 'SUCCESS') {
          t.success = now;
          t.successAtFirstPoll = first;
          break;
        }
        if (status === 'FAILED' || res.status !== 200) {
          t.failed = `${res.status} ${status ?? ''} ${res.body?.error_status ?? ''} ${res.body?.error_message ?? JSON.stringify(res.body)}`;
          break;
        }
        first = false;
        await sleep(POLL_MS);
      }
      polling.delete(id);
    })();
  };

  const commandOf = (labels: Record<string, string> | undefined) => labels?.[LABELS.commandId];
  const ns = svc.cluster.namespace;
  const kc = svc.cluster.kubeconfig;
  const batch = kc.makeApiClient(BatchV1Api);
  const core = kc.makeApiClient(CoreV1Api);

  const onJob = (job: V1Job) => {
    const id = commandOf(job.metadata?.labels);
    if (!id) return;
    const t = of(id);
    t.jobCreated ??= Date.now();
    if (!t.jobComplete && job.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')) {
      t.jobComplete = Date.now();
      watchForEnd(id);
    }
  };
  const jobs: ListWatch = startListWatch<V1Job>({
    kubeconfig: kc,
    logger: silent,
    path: `/apis/batch/v1/namespaces/${ns}/jobs`,
    list: () => batch.listNamespacedJob({ namespace: ns }),
    onList: (items) => items.forEach(onJob),
    onEvent: (type, job) => {
      if (type !== 'DELETED') onJob(job);
    },
  });

  const onPod = (pod: V1Pod) => {
    const id = commandOf(pod.metadata?.labels);
    if (!id) return;
    const t = of(id);
    if (!t.podExited && pod.status?.containerStatuses?.some((s) => s.state?.terminated)) {
      t.podExited = Date.now();
      watchForEnd(id);
    }
  };
  const pods: ListWatch = startListWatch<V1Pod>({
    kubeconfig: kc,
    logger: silent,
    path: `/api/v1/namespaces/${ns}/pods`,
    list: () => core.listNamespacedPod({ namespace: ns }),
    onList: (items) => items.forEach(onPod),
    onEvent: (type, pod) => {
      if (type !== 'DELETED') onPod(pod);
    },
  });

  // Runner results reach the database through the API; the operator deletes them with the Job, so
  // they are read as they come. One indexed query per 20 ms, whatever the number of commands; it
  // looks 20 ids back, as ids can commit out of order (a result missed only loses its resultStored).
  const sql = postgres(svc.databaseUrl, { max: 1, onnotice: () => {} });
  let maxId = 0;
  const results = (async () => {
    while (!stopped) {
      const rows = await sql<{ id: string; job_name: string; created_at: Date }[]>`
        select id, job_name, created_at from job_events
        where id > ${Math.max(0, maxId - 20)} and event->>'type' = 'result' order by id`.catch(() => []);
      for (const r of rows) {
        maxId = Math.max(maxId, Number(r.id));
        const ref = parseJobName(r.job_name);
        if (!ref) continue;
        of(ref.commandId).resultStored ??= r.created_at.getTime();
        watchForEnd(ref.commandId);
      }
      await sleep(POLL_MS);
    }
  })();

  return {
    times,
    polls: () => polls,
    async allEnded(ids, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const open = ids.filter((id) => !times.get(id)?.success && !times.get(id)?.failed);
        if (open.length === 0) return;
        if (Date.now() > deadline) throw new Error(`${open.length} commands had not ended after ${timeoutMs / 1000} s`);
        // A command whose end slipped past every trigger (no pod or Job event seen) is polled too, slowly.
        if (open.length <= 5) for (const id of open) if (times.get(id)?.jobCreated) watchForEnd(id);
        await sleep(500);
      }
    },
    async stop() {
      stopped = true;
      await Promise.all([jobs.stop(), pods.stop(), results]);
      await sql.end({ timeout: 5 });
    },
  };
}
