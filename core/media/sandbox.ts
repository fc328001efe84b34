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

// 'netns-nobody' (when the runner is root): also drop to the unprivileged uid/gid 65534 with setpriv,
// so ffmpeg can read only what the world can read, plus its working folder (which the runner hands
// over to that uid). The service's data folder is 0700, so stored files of other accounts and the
// database are out of reach even through an absolute path inside a playlist.
export type SandboxMode = 'none' | 'netns' | 'netns-nobody';

export const NOBODY_UID = 65534;
const DROP_PRIVILEGES = ['setpriv', `--reuid=${NOBODY_UID}`, `--regid=${NOBODY_UID}`, '--clear-groups', '--'];

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
  const works = (args: string[]) =>
    new Promise<boolean>((resolve) => {
      execFile(unshare, [...netnsArgs(isRoot()), '--', ...args], { timeout: 5000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }, (err) =>
        resolve(err === null),
      );
    });
  if (!(await works(['true']))) return 'none';
  return isRoot() && (await works([...DROP_PRIVILEGES, 'true'])) ? 'netns-nobody' : 'netns';
}

/** The command line that runs `program args` under the sandbox. */
export function wrapCommand(mode: SandboxMode, program: string, args: string[]): WrappedCommand {
  if (mode === 'none') return { program, args };
  // unshare (and setpriv) exec the program without --fork, so it keeps unshare's pid and process group.
  const drop = mode === 'netns-nobody' ? DROP_PRIVILEGES : [];
  return { program: 'unshare', args: [...netnsArgs(isRoot()), '--', ...drop, program, ...args] };
}
