// The runner's confinement, from the settings its starter hands it. Embedded mode: the service has
// already proved bubblewrap works (FFOP_CONFINEMENT_CHECKED=1), generated the seccomp program
// (FFOP_SECCOMP_PROGRAM) and lent this step a uid of its own (FFOP_SANDBOX_UID). In a pod, the runner
// checks for itself. It never falls back to running ffmpeg unconfined unless told to.
import { randomInt } from 'node:crypto';
import { Unconfined, type Confinement } from '../core/confine/confinement.ts';
import { isRoot, setUpConfinement, UNSAFE_SETTING } from '../core/confine/set-up.ts';
import { DEFAULT_UID_BASE, DEFAULT_UID_COUNT } from '../core/confine/uid-pool.ts';

export interface RunnerConfinement {
  confinement: Confinement;
  /** As root: the uid ffmpeg and ffprobe run as. */
  uid: number | undefined;
}

type Env = Record<string, string | undefined>;

/** FFOP_RUNNER_CONFINEMENT in a Job: 'bwrap' requires bubblewrap; 'bwrap-or-pod' falls back to the pod. */
export const POD_FALLBACK = 'bwrap-or-pod';

export async function confinementFromEnv(env: Env, cacheDir: string, log: (line: string) => void = () => {}): Promise<RunnerConfinement> {
  const uid = isRoot() ? sandboxUid(env.FFOP_SANDBOX_UID) : undefined;
  try {
    const confinement = await setUpConfinement({
      unsafe: env[UNSAFE_SETTING] === '1',
      cacheDir,
      seccompProgram: env.FFOP_SECCOMP_PROGRAM || undefined,
      trusted: env.FFOP_CONFINEMENT_CHECKED === '1',
      mountProc: env.FFOP_SANDBOX_PROC !== '0',
      ffmpegPath: env.FFMPEG_PATH,
      bwrapPath: env.FFOP_BWRAP_PATH || undefined,
    });
    return { confinement, uid };
  } catch (err) {
    // A pod under seccomp RuntimeDefault may not create user namespaces; where the operator allows it,
    // the pod (this step's files only, no credentials, non-root) is then the boundary.
    if (env.FFOP_RUNNER_CONFINEMENT !== POD_FALLBACK || isRoot()) throw err;
    const reason = (err as Error).message.split('. Install bubblewrap')[0];
    log(`${reason}; in this pod the pod is the boundary (FFOP_RUNNER_CONFINEMENT=${POD_FALLBACK})`);
    return { confinement: new Unconfined('pod'), uid: undefined };
  }
}

function sandboxUid(raw: string | undefined): number {
  if (raw !== undefined && raw !== '') {
    const uid = Number(raw);
    // Never root, never a system account: a uid from the sandbox range only.
    if (!Number.isSafeInteger(uid) || uid < 1000) throw new Error(`FFOP_SANDBOX_UID must be an unprivileged uid, got "${raw}"`);
    return uid;
  }
  // Started as root by something that lent no uid (a node running the runner directly): a random one
  // of the range, so concurrent steps almost never share one.
  return DEFAULT_UID_BASE + randomInt(DEFAULT_UID_COUNT);
}
