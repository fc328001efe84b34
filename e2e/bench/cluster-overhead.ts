// Benchmark: the operator's own overhead and memory in cluster mode, on a real control plane
// (e2e/cluster/service-fixture.ts: kube-apiserver, etcd, kube-controller-manager with the real Job
// controller, PostgreSQL, the API and the operator in this process, the test node agent running
// runner pods as local processes). Prints markdown rows:
//   1. `count` cheap commands submitted at once through the API (default 500): per command, submit ->
//      Job created (raw, and the operator's own part for commands that waited for their plan's
//      vCPUs) and the Job's end (pod exit, Job Complete, the runner's result) -> SUCCESS visible
//      through the API; p50/p95/max. See cluster-in-flight.ts and cluster-timeline.ts.
//   2. The operator's resident memory (VmRSS) as a process of its own (compiled, dist/operator/main.js)
//      with no FfmpegCommand and with `objects` of them (default 10,000). See cluster-operator-memory.ts.
// Run (needs PostgreSQL; builds dist/ first with scripts/build.sh):
//   FFOP_TEST_DATABASE_URL=$(bash scripts/postgres.sh start) npm run bench:cluster -- [count] [objects] [--max-vcpus N]
//   bash scripts/postgres.sh stop
// `count` or `objects` 0 skips that part. About 10 minutes with the defaults on 2 cores.
import { startClusterService } from '../cluster/service-fixture.ts';
import { benchCommandsInFlight } from './cluster-in-flight.ts';
import { benchOperatorMemory } from './cluster-operator-memory.ts';

const args = process.argv.slice(2);
const flag = args.indexOf('--max-vcpus');
const maxVcpus = flag >= 0 ? Number(args.splice(flag, 2)[1]) : 4;
const count = Number(args[0] ?? 500);
const objects = Number(args[1] ?? 10_000);

const coldStart = performance.now();
const svc = await startClusterService();
console.log(
  `cluster fixture up (control plane, CRD, RBAC, API, operator, node agent): ${((performance.now() - coldStart) / 1000).toFixed(1)} s`,
);
try {
  if (count > 0) {
    const started = performance.now();
    const rows = await benchCommandsInFlight(svc, { count, maxVcpus });
    console.log(['', ...rows, `(part 1 took ${((performance.now() - started) / 1000).toFixed(0)} s)`].join('\n'));
  }
  if (objects > 0) {
    const started = performance.now();
    const rows = await benchOperatorMemory(svc, { objects });
    console.log(['', ...rows, `(part 2 took ${((performance.now() - started) / 1000).toFixed(0)} s)`].join('\n'));
  }
} finally {
  await svc.close();
}
console.log(`\ntotal ${((performance.now() - coldStart) / 1000).toFixed(0)} s`);
