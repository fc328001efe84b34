// Benchmark: the operator's own overhead in cluster mode, on a real control plane. Per command it
// prints the time from submit to the Job existing, and from the Job finishing (as the Job controller
// records it) to SUCCESS being visible through the API. Observed by polling every 20 ms.
// Run (needs PostgreSQL): FFOP_TEST_DATABASE_URL=$(bash scripts/postgres.sh start) npx tsx e2e/bench/cluster-overhead.ts [runs]
import { BatchV1Api } from '@kubernetes/client-node';
import { LABELS } from '../../core/k8s/names.ts';
import { startClusterService } from '../cluster/service-fixture.ts';
import { median } from './stats.ts';

const runs = Number(process.argv[2] ?? 5);
const coldStart = performance.now();
const svc = await startClusterService();
console.log(`cluster fixture up (control plane, CRD, RBAC, API, operator, node agent): ${((performance.now() - coldStart) / 1000).toFixed(1)} s`);
const batch = svc.cluster.kubeconfig.makeApiClient(BatchV1Api);
const api = svc.client();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rows: { toJob: number; toSuccess: number; total: number }[] = [];
try {
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const id = await api.submit({ ffmpeg_command: '-f lavfi -i testsrc=size=64x48:duration=0.5 -c:v libx264 -preset ultrafast {{out_1}}', output_files: { out_1: 'o.mp4' }, vcpu_count: 1 });
    let tJob = 0;
    let tDone = 0;
    for (;;) {
      const jobs = (await batch.listNamespacedJob({ namespace: svc.cluster.namespace, labelSelector: `${LABELS.commandId}=${id}` })).items;
      if (jobs.length && !tJob) tJob = performance.now();
      if (jobs.some((j) => j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')) && !tDone) tDone = performance.now();
      const status = (await api.get(`/v1/commands/${id}`)).body.status;
      if (status === 'SUCCESS' || status === 'FAILED') {
        const tEnd = performance.now();
        if (status !== 'SUCCESS') throw new Error(`command ${id} failed`);
        // The operator may apply the result before the Job controller marks the Job Complete.
        const toSuccess = tDone ? (tEnd - tDone) / 1000 : 0;
        rows.push({ toJob: (tJob - t0) / 1000, toSuccess, total: (tEnd - t0) / 1000 });
        console.log(`run ${i + 1}: submit->Job ${((tJob - t0) / 1000).toFixed(3)} s, Job Complete->SUCCESS ${tDone ? toSuccess.toFixed(3) + ' s' : '(SUCCESS first)'}, submit->SUCCESS ${((tEnd - t0) / 1000).toFixed(2)} s`);
        break;
      }
      await sleep(20);
    }
  }
  console.log(`median of ${runs}: submit->Job ${median(rows.map((r) => r.toJob)).toFixed(3)} s, Job Complete->SUCCESS ${median(rows.map((r) => r.toSuccess)).toFixed(3)} s, submit->SUCCESS ${median(rows.map((r) => r.total)).toFixed(2)} s`);
} finally {
  await svc.close();
}
