// How every ffmpeg and ffprobe process is run: inside a bubblewrap sandbox that sees only its own
// working folder (mounted at /work) and read-only system paths, with its own PID, network, IPC and UTS
// namespaces, its own /proc, a minimal /dev, no capabilities, no_new_privs, the seccomp filter of
// seccomp-filter.py and rlimits; as root, also a uid of its own (UidPool). One interface, two
// backends: 'bwrap', and Unconfined (rlimits only): 'unconfined' where the operator explicitly accepted
// the risk, 'pod' for a runner pod that cannot create namespaces. Either can start a program held at
// the start gate (start-gate.ts, program-start.ts) when it has the gate's library.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, lstatSync, openSync, readlinkSync } from 'node:fs';
import { getPriority } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { prlimitArgs, type ProcessLimits } from './limits.ts';
import { setSessionNiceness } from './session-priority.ts';
import { gatedProgramPrefix } from './start-gate.ts';

export interface ConfinedRequest {
  /** 'ffmpeg', 'ffprobe', or an absolute path. */
  program: string;
  args: string[];
  /** Host path of the working folder: the only one the program sees, and its current folder. */
  folder: string;
  /** ffmpeg writes its outputs there; ffprobe only reads. */
  writable: boolean;
  /** As root: the uid (and gid) the program runs as; the folder must belong to it. */
  uid?: number;
  limits: ProcessLimits;
  /** Start it held before main() until let go (program-start.ts); only where `holdsStarts`. */
  held?: boolean;
}

export interface PreparedCommand {
  program: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Host paths of files to hand to the child as descriptors 3, 4, ... (opened at spawn). */
  inheritFiles: string[];
  /** A held start: the descriptor (after the inherited files) on which the program waits to be let go. */
  gateFd?: number;
}

export interface Confinement {
  /** 'pod': in a Kubernetes pod that cannot create namespaces, the pod itself is the boundary. */
  readonly kind: 'bwrap' | 'unconfined' | 'pod';
  /** Whether it can start programs held (it has the start gate's library). */
  readonly holdsStarts: boolean;
  /** How the confined program names `relative`, a path inside its folder. */
  pathInFolder(folder: string, relative: string): string;
  prepare(request: ConfinedRequest): PreparedCommand;
}

/** Where the working folder appears inside the sandbox. */
export const SANDBOX_FOLDER = '/work';

/** The environment of every run: nothing of the service's (its secrets stay out). */
function runEnv(): Record<string, string> {
  return {
    PATH: '/usr/bin:/bin',
    LANG: 'C',
    HOME: '/tmp', // fontconfig keeps its per-user cache there
    // glibc reserves 64 MiB of address space per malloc arena (up to 8 per core); fewer arenas keep
    // RLIMIT_AS about memory actually used.
    MALLOC_ARENA_MAX: '2',
  };
}

export interface BwrapOptions {
  /** The compiled seccomp filter (seccomp-program.ts). */
  seccompProgram: string;
  /** True when the service runs as root: namespaces without a user namespace, then setpriv to `uid`. */
  asRoot: boolean;
  /**
   * Mount a /proc of the sandbox's own PID namespace (default). In a container whose /proc has masked
   * paths no new procfs may be mounted; there the sandbox gets no /proc at all, which ffmpeg does not
   * need (nothing of any process, its own included, is then visible).
   */
  mountProc?: boolean;
  bwrapPath?: string;
  /** Host path of the start gate's library (start-gate.ts); without it, no held starts. */
  startGate?: string;
}

/** Where the start gate's library appears inside the sandbox. */
const SANDBOX_START_GATE = '/ffop/start-gate.so';

export class BwrapConfinement implements Confinement {
  readonly kind = 'bwrap' as const;
  private readonly options: BwrapOptions;
  private readonly systemMounts: string[];

  constructor(o: BwrapOptions) {
    this.options = o;
    this.systemMounts = systemMounts();
  }

  get seccompProgram(): string {
    return this.options.seccompProgram;
  }

  get mountsProc(): boolean {
    return this.options.mountProc !== false;
  }

  get startGate(): string | undefined {
    return this.options.startGate;
  }

  get holdsStarts(): boolean {
    return this.options.startGate !== undefined;
  }

  pathInFolder(_folder: string, relative: string): string {
    return join(SANDBOX_FOLDER, relative);
  }

  prepare(r: ConfinedRequest): PreparedCommand {
    if (this.options.asRoot && r.uid === undefined) throw new Error('a confined run as root needs a uid of its own');
    const gate = r.held ? heldStart(this.options.startGate, SANDBOX_START_GATE, 1) : null;
    const args = [
      '--unshare-pid',
      '--unshare-net',
      '--unshare-ipc',
      '--unshare-uts',
      '--unshare-cgroup-try',
      // Without root the namespaces need a user namespace; inside it the program keeps our uid.
      ...(this.options.asRoot ? ['--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID'] : ['--unshare-user', '--cap-drop', 'ALL']),
      '--die-with-parent',
      // No --new-session: spawnPrepared already starts a session of its own, which has no controlling
      // terminal (and the seccomp filter refuses TIOCSTI); staying in it keeps the sandbox in the
      // session group whose CPU priority spawnPrepared sets.
      ...this.systemMounts,
      ...programMount(r.program),
      // Its folder readable by the program's uid (bwrap makes missing parents 0700).
      ...(gate ? ['--perms', '0755', '--dir', dirname(SANDBOX_START_GATE), '--ro-bind', this.options.startGate!, SANDBOX_START_GATE] : []),
      ...(this.options.mountProc === false ? [] : ['--proc', '/proc']),
      '--dev',
      '/dev',
      '--perms',
      '01777',
      '--size',
      String(64 * 1024 * 1024),
      '--tmpfs',
      '/tmp',
      r.writable ? '--bind' : '--ro-bind',
      r.folder,
      SANDBOX_FOLDER,
      '--chdir',
      SANDBOX_FOLDER,
      '--seccomp',
      '3',
      '--',
      'prlimit',
      ...prlimitArgs(r.limits, r.uid !== undefined),
      '--',
    ];
    if (this.options.asRoot) {
      const id = String(r.uid);
      // Clearing the bounding set and inheritable caps leaves nothing to regain; bwrap already set
      // no_new_privs, so no setuid binary can either.
      args.push('setpriv', `--reuid=${id}`, `--regid=${id}`, '--clear-groups', '--bounding-set=-all', '--inh-caps=-all', '--');
    }
    args.push(...(gate?.prefix ?? []), r.program, ...r.args);
    return {
      program: this.options.bwrapPath ?? 'bwrap',
      args,
      cwd: '/',
      env: runEnv(),
      inheritFiles: [this.options.seccompProgram],
      gateFd: gate?.fd,
    };
  }
}

/** A held start's gate: its descriptor comes after the stdio three and the `inherited` files. */
function heldStart(library: string | undefined, libraryInProgram: string, inherited: number): { fd: number; prefix: string[] } {
  if (library === undefined) throw new Error('this confinement has no start gate: it cannot hold a start');
  const fd = 3 + inherited;
  return { fd, prefix: gatedProgramPrefix(libraryInProgram, fd) };
}

/**
 * Read-only system paths ffmpeg needs: /usr (programs, libraries, fonts), the top-level links of a
 * merged-/usr system (or the folders themselves), the dynamic loader's cache, the alternatives that
 * some libraries resolve through (libblas), and fontconfig's configuration and cache.
 */
function systemMounts(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32']) {
    const kind = pathKind(top);
    if (kind === 'link') args.push('--symlink', readlinkSync(top), top);
    else if (kind === 'dir') args.push('--ro-bind', top, top);
  }
  args.push('--perms', '0755', '--dir', '/etc');
  for (const path of ['/etc/ld.so.cache', '/etc/alternatives', '/etc/fonts', '/var/cache/fontconfig']) {
    args.push('--ro-bind-try', path, path);
  }
  return args;
}

/** A program outside /usr (a custom FFMPEG_PATH) is mounted read-only where it is. */
function programMount(program: string): string[] {
  if (!isAbsolute(program) || program.startsWith('/usr/')) return [];
  return ['--ro-bind', program, program];
}

function pathKind(path: string): 'link' | 'dir' | 'none' {
  try {
    const s = lstatSync(path);
    return s.isSymbolicLink() ? 'link' : s.isDirectory() ? 'dir' : 'none';
  } catch {
    return 'none';
  }
}

/**
 * No sandbox of its own: only the minimal environment and the rlimits. 'unconfined' when the operator
 * sets FFOP_UNSAFE_NO_CONFINEMENT=1 (not safe with untrusted users); 'pod' for a runner in a pod where
 * namespaces cannot be created, which then relies on the pod (one pod per step holding only that
 * step's files, non-root, no ServiceAccount token, seccomp RuntimeDefault, read-only root filesystem).
 */
export class Unconfined implements Confinement {
  readonly kind: 'unconfined' | 'pod';
  readonly startGate: string | undefined;

  constructor(kind: 'unconfined' | 'pod' = 'unconfined', startGate?: string) {
    this.kind = kind;
    this.startGate = startGate;
  }

  get holdsStarts(): boolean {
    return this.startGate !== undefined;
  }

  pathInFolder(folder: string, relative: string): string {
    return join(folder, relative);
  }

  prepare(r: ConfinedRequest): PreparedCommand {
    const gate = r.held ? heldStart(this.startGate, this.startGate!, 0) : null;
    return {
      program: 'prlimit',
      args: [...prlimitArgs(r.limits, false), '--', ...(gate?.prefix ?? []), r.program, ...r.args],
      cwd: r.folder,
      env: runEnv(),
      inheritFiles: [],
      gateFd: gate?.fd,
    };
  }
}

/**
 * Starts a prepared command in a session and process group of its own (so a timeout can kill all it
 * started, and it has no controlling terminal), stdout and stderr piped, stdin closed, at `niceness`
 * (default: ours) for the session too (session-priority.ts). The inherited files are opened for this
 * child only and closed again in the parent once it has them. A held start's gate is a socket after
 * them (program-start.ts uses it).
 */
export function spawnPrepared(command: PreparedCommand, niceness = getPriority()): ChildProcess {
  if (command.gateFd !== undefined && command.gateFd !== 3 + command.inheritFiles.length) {
    throw new Error(`the start gate must come right after the inherited files, not at descriptor ${command.gateFd}`);
  }
  const fds = command.inheritFiles.map((path) => openSync(path, 'r'));
  try {
    const child = spawn(command.program, command.args, {
      cwd: command.cwd,
      env: command.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ...fds, ...(command.gateFd === undefined ? [] : ['pipe' as const])],
    });
    setSessionNiceness(child.pid, niceness);
    return child;
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}
