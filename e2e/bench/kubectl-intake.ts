// Benchmark: a command created as an FfmpegCommand (kubectl, GitOps) against the same command submitted
// through the HTTP API, on the test control plane (e2e/cluster/service-fixture.ts: kube-apiserver, etcd,
// the Job controller, PostgreSQL, the API and the operator in this process, runner pods as local
// processes). Rounds alternate the two ways, so both see the same machine. Per command:
//   taken in   create -> the operator's intake has stored it (the API answers its uid) [resource only]
//   SUCCESS    create or submit -> the API answers SUCCESS (polled every 20 ms)
// Run (needs PostgreSQL):
//   FFOP_TEST_DATABASE_URL=$(bash scripts/postgres.sh start) npx tsx e2e/bench/kubectl-intake.ts [rounds]
import { CustomObjectsApi } from '@kubernetes/client-node';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { GROUP, NAMESPACE_BINDING, PLURAL, VERSION } from '../../core/k8s/names.ts';
import type { FfmpegCommandObject } from '../../core/k8s/ffmpeg-command.ts';
import { startClusterService } from '../cluster/service-fixture.ts';
import { median, quantile, reportRow } from './stats.ts';

const rounds = Number(process.argv[2] ?? 15);
const TEAM = 'bench-team';
const LINE = '-f lavfi -i testsrc=size=32x32:duration=0.2 -c:v libx264 -preset ultrafast {{out_1}}';

const svc = await startClusterService({ watchNamespaces: [TEAM] });
try {
  const key = await svc.newAccount('pro');
  const account = (await new AccountsRepo(svc.database.db).authenticate(key))!.account;
  await svc.cluster.kubectl(['label', 'namespace', TEAM, `${NAMESPACE_BINDING.account}=${account.id}`]);
  const api = svc.client(key);
  const custom = svc.cluster.kubeconfig.makeApiClient(CustomObjectsApi);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** Polls the API until the command is SUCCESS; the time it was first known (taken in) and ended. */
  const follow = async (id: string, start: number) => {
    let known: number | undefined;
    for (const deadline = start + 120_000; performance.now() < deadline; await sleep(20)) {
      const res = await api.get(`/v1/commands/${id}`);
      if (res.status === 200) known ??= performance.now();
      if (res.body?.status === 'FAILED') throw new Error(`${id} FAILED: ${res.body.error_message}`);
      if (res.body?.status === 'SUCCESS') return { known: known! - start, success: performance.now() - start };
    }
    throw new Error(`${id} did not end in 120 s`);
  };

  const viaApi: number[] = [];
  const viaResource: number[] = [];
  const takenIn: number[] = [];
  for (let i = 0; i < rounds + 1; i++) {
    let start = performance.now();
    const id = await api.submit({ ffmpeg_command: LINE, output_files: { out_1: 'o.mp4' }, vcpu_count: 1 });
    const http = await follow(id, start);
    start = performance.now();
    const created = (await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: TEAM,
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'FfmpegCommand',
        metadata: { name: `bench-${i}`, namespace: TEAM },
        spec: { command: LINE, outputFiles: { out_1: 'o.mp4' }, vcpuCount: 1 },
      },
    })) as FfmpegCommandObject;
    const resource = await follow(created.metadata!.uid!, start);
    if (i === 0) continue; // warm-up
    viaApi.push(http.success);
    viaResource.push(resource.success);
    takenIn.push(resource.known);
  }
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  console.log(`${rounds} rounds, each a command through the HTTP API then the same as an FfmpegCommand (p50 / p90):`);
  console.log(`  HTTP API submit -> SUCCESS       ${ms(median(viaApi))} / ${ms(quantile(viaApi, 0.9))}`);
  console.log(`  FfmpegCommand create -> SUCCESS  ${ms(median(viaResource))} / ${ms(quantile(viaResource, 0.9))}`);
  console.log(`  FfmpegCommand create -> taken in ${ms(median(takenIn))} / ${ms(quantile(takenIn, 0.9))}`);
  reportRow({
    what: 'a cheap command made as an FfmpegCommand, create -> SUCCESS (test control plane)',
    service: ms(median(viaResource)),
    baseline: `${ms(median(viaApi))} (HTTP API submit)`,
    ratio: `${median(viaResource) - median(viaApi) >= 0 ? '+' : ''}${ms(median(viaResource) - median(viaApi))}`,
    goal: 'none set (issue 30)',
  });
} finally {
  await svc.close();
}
