// Start-up: builds the confinement every ffmpeg/ffprobe run goes through and proves that it works on
// this host by running ffmpeg inside it. Without it the service refuses to start, unless the operator
// explicitly sets FFOP_UNSAFE_NO_CONFINEMENT=1. The same run proves the start gate (held starts,
// program-start.ts); where it does not work, programs are started when needed instead, as before.
import { execFile } from 'node:child_process';
import { chown, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ffmpegStart, runFfmpeg } from '../media/run-ffmpeg.ts';
import { BwrapConfinement, Unconfined, type BwrapOptions, type Confinement } from './confinement.ts';
import { DEFAULT_OPEN_FILES, DEFAULT_PROCESSES } from './limits.ts';
import { ensureSeccompProgram } from './seccomp-program.ts';
import { defaultStartGateLibrary } from './start-gate.ts';
import type { UidPool } from './uid-pool.ts';
import { RUNNER_ENV, type RunnerSettings } from '../jobs/runner-contract.ts';

/** The service's setting, passed on to its runners under the same name. */
export const UNSAFE_SETTING = RUNNER_ENV.unsafeNoConfinement;

export class ConfinementUnavailable extends Error {
  constructor(reason: string) {
    super(
      `ffmpeg cannot be confined on this host: ${reason}. Install bubblewrap and python3-seccomp ` +
        `(apt-get install bubblewrap python3-seccomp) and allow user namespaces, or set ${UNSAFE_SETTING}=1 ` +
        'to run ffmpeg unconfined (only for trusted users: commands can then read what the service can read)',
    );
    this.name = 'ConfinementUnavailable';
  }
}

export interface ConfinementSettings {
  /** FFOP_UNSAFE_NO_CONFINEMENT=1: run unconfined, on purpose. */
  unsafe: boolean;
  /** Where the seccomp program is cached (and the self-test folder made). */
  cacheDir: string;
  /** A prebuilt seccomp program (FFOP_SECCOMP_PROGRAM), e.g. in an image. */
  seccompProgram?: string;
  /** As root, the self-test borrows a uid from here. */
  uids?: UidPool;
  ffmpegPath?: string;
  /** Skip the self-test: the process that handed us these settings already ran it (runners). */
  trusted?: boolean;
  /** With `trusted`: what the self-test found about mounting /proc. */
  mountProc?: boolean;
  bwrapPath?: string;
  /**
   * The start gate's library, already proved by the process that hands it over (a runner's starter).
   * Absent: the built one (start-gate.ts), used only if the self-test's held start works.
   */
  startGate?: string;
  /** Where the built library is looked for; default defaultStartGateLibrary. */
  findStartGate?: () => string | undefined;
  /** Told why the start gate is not used although it was built. */
  log?: (line: string) => void;
}

/** The self-test's held ffmpeg never said it was loaded and waiting: the start gate does not work here. */
class StartGateRefused extends Error {}

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export async function setUpConfinement(s: ConfinementSettings): Promise<Confinement> {
  if (s.unsafe) return setUpUnconfined('unconfined', s);
  const options = { seccompProgram: '', asRoot: isRoot(), bwrapPath: s.bwrapPath };
  if (s.trusted) {
    // The process that started us checked the tools and ran the self-test with these settings.
    if (!s.seccompProgram) throw new ConfinementUnavailable(`${RUNNER_ENV.seccompProgram} is not set`);
    const trusted = { ...options, seccompProgram: s.seccompProgram, mountProc: s.mountProc };
    return withStartGate((startGate) => new BwrapConfinement({ ...trusted, startGate }), s);
  }
  try {
    await runQuietly(s.bwrapPath ?? 'bwrap', ['--version']);
    await runQuietly('prlimit', ['--version']);
    if (isRoot()) await runQuietly('setpriv', ['--version']);
    options.seccompProgram = await ensureSeccompProgram(s.cacheDir, s.seccompProgram);
  } catch (err) {
    throw new ConfinementUnavailable((err as Error).message);
  }
  const startGate = s.startGate ?? (s.findStartGate ?? defaultStartGateLibrary)();
  try {
    return await selfTestedBwrap({ ...options, startGate }, s);
  } catch (err) {
    if (!(err instanceof StartGateRefused)) throw err;
    s.log?.(err.message);
    return selfTestedBwrap(options, s);
  }
}

/** Bubblewrap with these options, proved by the self-test; without its own /proc where none may be mounted. */
async function selfTestedBwrap(options: BwrapOptions, s: ConfinementSettings): Promise<BwrapConfinement> {
  const confinement = new BwrapConfinement(options);
  try {
    await selfTest(confinement, s);
    return confinement;
  } catch (err) {
    // Inside a container, /proc has masked paths and no procfs may be mounted over it.
    if (!/Can't mount proc/.test((err as Error).message)) throw err;
    const withoutProc = new BwrapConfinement({ ...options, mountProc: false });
    await selfTest(withoutProc, s);
    return withoutProc;
  }
}

/**
 * No sandbox of its own ('unconfined' on purpose, or 'pod' for a runner pod where bubblewrap cannot
 * run), with the start gate where it works.
 */
export function setUpUnconfined(kind: 'unconfined' | 'pod', s: ConfinementSettings): Promise<Confinement> {
  return withStartGate((startGate) => new Unconfined(kind, startGate), s);
}

/**
 * `make` with the start gate: as handed over (already proved), else the built library once a self-test
 * of a held start works with it; otherwise without (held starts only save time).
 */
async function withStartGate(make: (startGate: string | undefined) => Confinement, s: ConfinementSettings): Promise<Confinement> {
  if (s.startGate !== undefined) return make(s.startGate);
  const library = (s.findStartGate ?? defaultStartGateLibrary)();
  if (library === undefined) return make(undefined);
  const gated = make(library);
  try {
    await selfTest(gated, s);
    return gated;
  } catch (err) {
    s.log?.(err instanceof StartGateRefused ? err.message : `the start gate is not used: ${(err as Error).message}`);
    return make(undefined);
  }
}

/** A tiny encode inside the sandbox: libraries load, the folder is writable, the filter and limits let ffmpeg work. */
async function selfTest(confinement: Confinement, s: ConfinementSettings): Promise<void> {
  await mkdir(s.cacheDir, { recursive: true, mode: 0o700 });
  const folder = await mkdtemp(join(s.cacheDir, 'self-test-'));
  const uid = isRoot() ? (s.uids?.acquire() ?? 65534) : undefined;
  try {
    if (uid !== undefined) await chown(folder, uid, uid);
    const options = {
      argv: ['-hide_banner', '-nostdin', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=s=32x32:d=0.1', '-y', 'self-test.mkv'],
      folder,
      confinement,
      uid,
      ffmpegPath: s.ffmpegPath,
      limits: {
        memoryBytes: 1024 ** 3,
        cpuSeconds: 30,
        fileSizeBytes: 1024 ** 2,
        openFiles: DEFAULT_OPEN_FILES,
        processes: DEFAULT_PROCESSES,
      },
    };
    // Where the confinement holds starts, ffmpeg must say from the gate that it is loaded and waiting
    // (a library the loader refused would let it run at once, before its inputs are there).
    const start = ffmpegStart(options);
    if (start.isHeld && !(await start.ready())) {
      start.cancel();
      throw new StartGateRefused('ffmpeg and ffprobe are started when needed, not ahead: a held start did not wait at the start gate');
    }
    const run = await runFfmpeg({ ...options, start, timeoutSeconds: 30 });
    const written = await stat(join(folder, 'self-test.mkv')).then(
      (st) => st.size > 0,
      () => false,
    );
    if (run.exitCode !== 0 || !written) {
      const why = run.stderrTail.trim() || 'no output written';
      throw new ConfinementUnavailable(`a test run of ffmpeg in bubblewrap failed (${run.signal ?? `exit ${run.exitCode}`}): ${why}`);
    }
  } finally {
    if (uid !== undefined) s.uids?.release(uid);
    await rm(folder, { recursive: true, force: true });
  }
}

/** What a runner started by this process needs to confine its ffmpeg the same way without checking again. */
export function runnerSettingsFor(confinement: Confinement): RunnerSettings {
  if (confinement instanceof BwrapConfinement) {
    return {
      confinementChecked: true,
      seccompProgram: confinement.seccompProgram,
      sandboxProc: confinement.mountsProc,
      startGate: confinement.startGate,
    };
  }
  return { unsafeNoConfinement: true, startGate: confinement instanceof Unconfined ? confinement.startGate : undefined };
}

function runQuietly(program: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { timeout: 10_000 }, (err) =>
      err ? reject(new Error(`${program} is not usable: ${err.message}`)) : resolve(),
    );
  });
}
