// A pod that fails without a result (here: its runner cannot deliver events, so it exits 1) ends
// its step with INTERNAL_ERROR and the pod's own termination message.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { parseFfmpegCommand } from '../../core/command-line/parse.ts';
import { jobName } from '../../core/jobs/job-name.ts';
import { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import type { RunnerEvent } from '../../core/jobs/step-spec.ts';
import { createLogger } from '../../core/logger.ts';
import { KubernetesBackend } from '../../operator/kubernetes-backend.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';

let svc: ClusterService;
let backend: KubernetesBackend;
before(async () => {
  svc = await startClusterService({ withOperator: false });
  backend = new KubernetesBackend({
    kubeconfig: svc.operatorKubeConfig,
    namespace: svc.cluster.namespace,
    events: new JobEventsRepo(svc.database.db),
    logger: createLogger('silent'),
    runnerImage: 'ffmpeg-operator-runner:test',
    reportUrl: `${svc.apiUrl}/internal/v1/job-events`,
    tokenSecret: 'not-the-api-secret', // every event the runner sends is refused with 401
    ownerOf: () => null,
    workRoot: svc.podsDir,
  });
  await backend.start();
});
after(async () => {
  await backend?.close();
  await svc?.close();
});

test("a runner that exits with an error and no result fails the step with the pod's message", async () => {
  const commandId = randomUUID();
  const ref = { name: jobName(commandId, 0, 1), commandId, step: 0, attempt: 1 };
  const results: RunnerEvent[] = [];
  backend.subscribe((r, e) => {
    if (r.name === ref.name && e.type === 'result') results.push(e);
  });
  await backend.ensureJob({
    ref,
    accountId: 'acct',
    vcpus: 1,
    deadlineSeconds: 120,
    spec: {
      commandId,
      step: 0,
      command: parseFfmpegCommand('-f lavfi -i testsrc=duration=0.2 -c:v libx264 -preset ultrafast {{out_1}}', {
        inputAliases: new Set(),
        outputAliases: new Set(['out_1']),
      }),
      inputs: [],
      outputs: [
        { alias: 'out_1', fileName: 'o.mp4', kind: 'file', uploadUrl: await svc.storage.presignPut(`public/x/${commandId}/o.mp4`, 600) },
      ],
      threads: 1,
      timeoutSeconds: 60,
      download: { maxBytes: 1e9, timeoutSeconds: 30, allow: [] },
    },
  });
  for (let i = 0; i < 900 && results.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(results.length, 1);
  const result = results[0] as Extract<RunnerEvent, { type: 'result'; ok: false }>;
  assert.equal(result.ok, false);
  assert.equal(result.errorStatus, 'INTERNAL_ERROR');
  assert.match(result.errorMessage, /pod failed without a result: the runner exited with code 1/);
  assert.match(result.errorMessage, /could not deliver the result/);
});
