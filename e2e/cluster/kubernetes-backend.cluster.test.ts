// The job-backend contract (core/engine/testing/job-backend-contract.ts) against Kubernetes Jobs on a real
// control plane, with the operator's ServiceAccount and the runner reporting through the API.
import { createLogger } from '../../core/logger.ts';
import { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { KubernetesBackend } from '../../operator/kubernetes-backend.ts';
import { jobBackendContract } from '../../core/engine/testing/job-backend-contract.ts';
import { startClusterService } from './service-fixture.ts';

jobBackendContract('Kubernetes Jobs', async () => {
  // No operator: this test is the only reader of runner events.
  const svc = await startClusterService({ withOperator: false });
  const backend = new KubernetesBackend({
    kubeconfig: svc.operatorKubeConfig,
    namespace: svc.cluster.namespace,
    events: new JobEventsRepo(svc.database.db),
    logger: createLogger(process.env.FFOP_TEST_LOG_LEVEL ?? 'silent'),
    runnerImage: 'ffmpeg-operator-runner:test',
    reportUrl: `${svc.apiUrl}/internal/v1/job-events`,
    tokenSecret: svc.tokenSecret,
    ownerOf: () => null,
    workRoot: svc.podsDir,
  });
  await backend.start();
  return {
    backend,
    storage: svc.storage,
    close: async () => {
      await backend.close();
      await svc.close();
    },
  };
});
