// Test fixture: Kueue (the batch-admission controller of Kubernetes, built from its Go module by
// e2e/kueue/build.sh) running against a test control plane from e2e/cluster/cluster.ts, with its
// CRDs, webhooks and a Configuration that manages batch/v1 Jobs labelled with a queue name.
// Start it after the cluster and stop it before the cluster:
//   const cluster = await startCluster();
//   const kueue = await startKueue(cluster);
//   ...
//   await kueue.stop();
//   await cluster.stop();
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnvText, runProcess, type Cluster } from '../cluster/cluster.ts';

const KUEUE_DIR = dirname(fileURLToPath(import.meta.url));

export interface Kueue {
  /** The namespace Kueue runs its own objects in (kueue-system). */
  namespace: string;
  stateDir: string;
  /** The KEY=value lines e2e/kueue/start.sh wrote to <stateDir>/env. */
  env: Record<string, string>;
  /** The manager's log file. */
  logFile: string;
  /** Stops the manager, takes its webhooks out of the cluster and removes its state dir. */
  stop(): Promise<void>;
}

export async function startKueue(cluster: Pick<Cluster, 'stateDir'>): Promise<Kueue> {
  const build = await runProcess('bash', [join(KUEUE_DIR, 'build.sh')]);
  if (build.code !== 0) throw new Error(`kueue/build.sh failed (${build.code}): ${tail(build.stderr)}`);
  const binDir = parseEnvText(build.stdout);

  const stateDir = await mkdtemp(join(tmpdir(), 'ffop-kueue-'));
  const removeState = () => rm(stateDir, { recursive: true, force: true });
  const started = await runProcess('bash', [join(KUEUE_DIR, 'start.sh'), stateDir, cluster.stateDir], {
    env: {
      ...process.env,
      ...binDir,
      // If this test process dies without stop(), Kueue goes with it (as the control plane does).
      FFOP_KUEUE_OWNER_PID: String(process.pid),
    },
  });
  if (started.code !== 0) {
    await removeState();
    throw new Error(`kueue/start.sh failed (${started.code}): ${tail(started.stderr)}`);
  }

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const result = await runProcess('bash', [join(KUEUE_DIR, 'stop.sh'), stateDir]);
    if (result.code !== 0) throw new Error(`kueue/stop.sh failed (${result.code}): ${tail(result.stderr)}`);
    await removeState();
  };

  try {
    const env = parseEnvText(await readFile(join(stateDir, 'env'), 'utf8'));
    return { namespace: env.FFOP_KUEUE_NAMESPACE, stateDir, env, logFile: env.FFOP_KUEUE_LOG, stop };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

function tail(text: string, lines = 30): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
