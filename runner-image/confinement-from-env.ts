// The runner's confinement, from the settings its starter hands it (runner-contract.ts). Embedded
// mode: the service has already proved bubblewrap works (confinementChecked), generated the seccomp
// program (seccompProgram) and lent this step a uid of its own (sandboxUid). In a pod, the runner
// checks for itself. It never falls back to running ffmpeg unconfined unless told to.
import { randomInt } from 'node:crypto';
import type { Confinement } from '../core/confine/confinement.ts';
import { isRoot, setUpConfinement, setUpUnconfined } from '../core/confine/set-up.ts';
import { DEFAULT_UID_BASE, DEFAULT_UID_COUNT } from '../core/confine/uid-pool.ts';
import { POD_FALLBACK, RUNNER_ENV, type RunnerSettings } from '../core/jobs/runner-contract.ts';

export interface RunnerConfinement {
  confinement: Confinement;
  /** As root: the uid ffmpeg and ffprobe run as. */
  uid: number | undefined;
}

type ConfinementSettings = Pick<
  RunnerSettings,
  | 'sandboxUid'
  | 'unsafeNoConfinement'
  | 'seccompProgram'
  | 'confinementChecked'
  | 'sandboxProc'
  | 'ffmpegPath'
  | 'bwrapPath'
  | 'confinement'
  | 'startGate'
>;

export async function confinementFromEnv(
  settings: ConfinementSettings,
  cacheDir: string,
  log: (line: string) => void = () => {},
): Promise<RunnerConfinement> {
  const uid = isRoot() ? sandboxUid(settings.sandboxUid) : undefined;
  try {
    const confinement = await setUpConfinement({
      unsafe: settings.unsafeNoConfinement === true,
      cacheDir,
      seccompProgram: settings.seccompProgram,
      trusted: settings.confinementChecked === true,
      mountProc: settings.sandboxProc !== false,
      ffmpegPath: settings.ffmpegPath,
      bwrapPath: settings.bwrapPath,
      startGate: settings.startGate,
      log,
    });
    return { confinement, uid };
  } catch (err) {
    // A pod under seccomp RuntimeDefault may not create user namespaces; where the operator allows it,
    // the pod (this step's files only, no credentials, non-root) is then the boundary.
    if (settings.confinement !== POD_FALLBACK || isRoot()) throw err;
    const reason = (err as Error).message.split('. Install bubblewrap')[0];
    log(`${reason}; in this pod the pod is the boundary (${RUNNER_ENV.confinement}=${POD_FALLBACK})`);
    const pod = await setUpUnconfined('pod', {
      unsafe: true,
      cacheDir,
      ffmpegPath: settings.ffmpegPath,
      startGate: settings.startGate,
      log,
    });
    return { confinement: pod, uid: undefined };
  }
}

function sandboxUid(uid: number | undefined): number {
  if (uid !== undefined) {
    // Never root, never a system account: a uid from the sandbox range only.
    if (!Number.isSafeInteger(uid) || uid < 1000) throw new Error(`${RUNNER_ENV.sandboxUid} must be an unprivileged uid, got "${uid}"`);
    return uid;
  }
  // Started as root by something that lent no uid (a node running the runner directly): a random one
  // of the range, so concurrent steps almost never share one.
  return DEFAULT_UID_BASE + randomInt(DEFAULT_UID_COUNT);
}
