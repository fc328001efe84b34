// The job-backend contract (core/engine/testing/job-backend-contract.ts) against Kubernetes Jobs on a real
// control plane, with the operator's ServiceAccount and the runner reporting through the API.
import { createLogger } from '../../core/logger.ts';
import { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { KubernetesBackend } from '../../operator/kubernetes-backend.ts';
import { jobBackendContract } from '../../core/engine/testing/job-backend-contract.ts';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import type { JobRequest } from '../../core/engine/job-backend.ts';
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
  // The API takes a Job's reports only while its command runs that step (api/routes/job-events.ts):
  // each contract job gets its command, running, as the reconciler would have stored it.
  const caller = await newCaller(new AccountsRepo(svc.database.db), 'contract', 'pro');
  const commands = new CommandsRepo(svc.database.db);
  const ensureJob = backend.ensureJob.bind(backend);
  backend.ensureJob = async (request: JobRequest) => {
    if (!(await commands.findById(request.ref.commandId))) {
      await commands.insert({
        ...testCommandRow(caller, { max_command_run_seconds: request.spec.timeoutSeconds }),
        id: request.ref.commandId,
      });
      await commands.update(request.ref.commandId, { status: 'PROCESSING', attempt: request.ref.attempt });
    }
    return ensureJob(request);
  };
  return {
    backend,
    storage: svc.storage,
    close: async () => {
      await backend.close();
      await svc.close();
    },
  };
});
