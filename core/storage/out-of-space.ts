// A full disk is the service's problem, not the user's: whichever write meets it (an input's
// download, ffmpeg's output in the working folder, storing an output or an upload part), the client
// is told the service ran out of space (error status OUT_OF_SPACE, or HTTP 507), never FFMPEG_FAILED
// or a 500.
import { statfs } from 'node:fs/promises';

/** ENOSPC (the filesystem is full) or EDQUOT (the service user's disk quota is used up). */
export function isOutOfSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** ffmpeg's own words for ENOSPC and EDQUOT (strerror), as they end its stderr. */
const FFMPEG_OUT_OF_SPACE = /No space left on device|Disk quota exceeded/;

export function ffmpegRanOutOfSpace(stderrTail: string): boolean {
  return FFMPEG_OUT_OF_SPACE.test(stderrTail);
}

/** The error_message of a command or file that failed this way; `while` says what was being written. */
export function outOfSpaceMessage(while_: string, detail?: string): string {
  const tail = detail ? `: ${detail}` : '';
  return `the service ran out of disk space while ${while_}; nothing is wrong with the request, try again later${tail}`;
}

/** Bytes an unprivileged writer may still write on the filesystem holding `path`. */
export async function freeBytes(path: string): Promise<number> {
  const s = await statfs(path);
  return s.bavail * s.bsize;
}
