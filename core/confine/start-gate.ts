// Where the start gate library (start-gate.c, compiled by scripts/build.sh) is, and how a confined
// program is started with it preloaded. Only the program itself gets it: bwrap, prlimit and setpriv
// start as before, and the gate's variables reach the program through env(1), last in the chain.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The descriptor's number, in the program's environment (start-gate.c reads it). */
const START_GATE_VARIABLE = 'FFOP_START_GATE_FD';

/**
 * The built library: next to this module in dist/, or, running from the sources, in the build's dist/.
 * Undefined when it was not built (programs are then started when they are needed, as before).
 */
export function defaultStartGateLibrary(): string | undefined {
  for (const candidate of ['./start-gate.so', '../../dist/core/confine/start-gate.so']) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return path;
  }
  return undefined;
}

/** The words before the program: env(1) preloading the library (as the program sees its path) and naming the gate's descriptor. */
export function gatedProgramPrefix(libraryInProgram: string, gateFd: number): string[] {
  return ['/usr/bin/env', `LD_PRELOAD=${libraryInProgram}`, `${START_GATE_VARIABLE}=${gateFd}`];
}
