// OS sandbox for ffmpeg/ffprobe, where the host allows one.
//
// 'netns': the program runs in a new, empty network namespace (only a loopback that is down), so it
// cannot reach any network even if an option or a playlist slipped past the command checks.
// Unprivileged hosts need a user namespace for that (`--map-root-user`); root does not.
//
// Not applied yet: mount namespaces, Landlock (restrict file access to the working folder) and
// seccomp (syscall filter). Node has no binding for Landlock or seccomp, and the Debian images have
// no small helper that applies them, so file access still rests on the argument checks
// (placeholders, relative names, -protocol_whitelist, -safe 1) and, in cluster mode, on the pod.

import { execFile } from 'node:child_process';

export type SandboxMode = 'none' | 'netns';

export interface WrappedCommand {
  program: string;
  args: string[];
}

/** unshare's arguments for a private network namespace; the same in detection and in use. */
function netnsArgs(isRoot: boolean): string[] {
  return isRoot ? ['--net'] : ['--net', '--map-root-user'];
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Probes once what the host allows; call at start-up and pass the result along. */
export async function detectSandbox(opts: { unsharePath?: string } = {}): Promise<SandboxMode> {
  const unshare = opts.unsharePath ?? 'unshare';
  const works = await new Promise<boolean>((resolve) => {
    execFile(unshare, [...netnsArgs(isRoot()), '--', 'true'], { timeout: 5000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, (err) =>
      resolve(err === null),
    );
  });
  return works ? 'netns' : 'none';
}

/** The command line that runs `program args` under the sandbox. */
export function wrapCommand(mode: SandboxMode, program: string, args: string[]): WrappedCommand {
  if (mode === 'none') return { program, args };
  // unshare execs the program without --fork, so the program keeps unshare's pid and process group.
  return { program: 'unshare', args: [...netnsArgs(isRoot()), '--', program, ...args] };
}
