// A confined program started ahead of its time: its sandbox is set up and its libraries are loaded
// while the runner still downloads the inputs (ffmpeg) or ffmpeg still runs (ffprobe), then it waits
// before main() at the start gate (start-gate.c) until it is let go. Letting it go takes about 10 ms
// where a start takes about 100 ms (bubblewrap, prlimit, setpriv, and ffmpeg's ~200 libraries).
// Where the confinement has no gate, or a held start died before it was ready, the program is started
// when it is let go, as before: a held start never changes what runs, only when the loading happens.
import type { ChildProcess } from 'node:child_process';
import type { Duplex } from 'node:stream';
import { spawnPrepared, type ConfinedRequest, type Confinement, type PreparedCommand } from './confinement.ts';

/** Longest wait for a held program to say it is loaded; past it, a fresh start is made instead. */
const READY_TIMEOUT_MS = 30_000;

interface Held {
  child: ChildProcess;
  gate: Duplex;
  /** True once it said it is loaded and waiting; false if it ended (or the wait timed out) first. */
  ready: Promise<boolean>;
}

export class ProgramStart {
  private readonly confinement: Confinement;
  private readonly request: ConfinedRequest;
  private held: Held | null;
  private done = false;

  private constructor(confinement: Confinement, request: ConfinedRequest, hold: boolean) {
    this.confinement = confinement;
    this.request = request;
    this.held = hold ? holdStart(confinement.prepare({ ...request, held: true })) : null;
  }

  /** Starts the program now, held at the gate, where the confinement can; otherwise only remembers it. */
  static ahead(confinement: Confinement, request: ConfinedRequest): ProgramStart {
    return new ProgramStart(confinement, request, confinement.holdsStarts);
  }

  /** Whether a held start is waiting (or loading) for this program. */
  get isHeld(): boolean {
    return this.held !== null;
  }

  /** The held process (until it is let go or cancelled). */
  get heldPid(): number | undefined {
    return this.held?.child.pid;
  }

  /** Resolves true once the held program is loaded and waiting at the gate (false: no held start to wait for). */
  async ready(): Promise<boolean> {
    return this.held === null ? false : this.held.ready;
  }

  /** The program, running: the held one let go once it is ready, else a fresh start. Only once. */
  async go(): Promise<ChildProcess> {
    if (this.done) throw new Error('this program start was already used');
    this.done = true;
    const held = this.held;
    this.held = null;
    if (held !== null) {
      if (await held.ready) {
        held.gate.end('g');
        return held.child;
      }
      stop(held);
    }
    return spawnPrepared(this.confinement.prepare(this.request));
  }

  /** Stops a held program that will not be let go (no-op once `go` was called). */
  cancel(): void {
    this.done = true;
    if (this.held !== null) stop(this.held);
    this.held = null;
  }
}

function holdStart(command: PreparedCommand): Held {
  const child = spawnPrepared(command);
  const gate = child.stdio[command.gateFd!] as Duplex;
  // A program that dies at the gate closes it; writing to it then fails, which changes nothing here.
  gate.on('error', () => {});
  // The gate flows from here on: the program's closing it is read, so the child's 'close' can come.
  const ready = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), READY_TIMEOUT_MS);
    const settle = (value: boolean) => {
      clearTimeout(timer);
      gate.off('data', onData);
      resolve(value);
    };
    const onData = (chunk: Buffer) => settle(chunk[0] === 'r'.charCodeAt(0));
    gate.on('data', onData);
    gate.once('end', () => settle(false));
    child.once('exit', () => settle(false));
    child.once('error', () => settle(false));
  });
  return { child, gate, ready };
}

/** The held program and everything in its process group, gone. */
function stop(held: Held): void {
  held.gate.destroy();
  held.child.stdout?.destroy();
  held.child.stderr?.destroy();
  if (held.child.pid === undefined) return;
  try {
    process.kill(-held.child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
