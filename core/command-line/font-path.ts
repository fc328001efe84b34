// System fonts by absolute path (`drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf`,
// `subtitles=...:fontsdir=/usr/share/fonts`, `-attach /usr/share/fonts/...`): only inside the font
// folders, written plainly. The sandbox shows ffmpeg /usr read-only and nothing else of the system but
// the loader cache and fontconfig, so a path that leaves these folders through a link finds nothing
// there; where the service can see the file, a link out of the folders is refused here already.
import { realpathSync } from 'node:fs';
import { CommandRejected } from './parsed-command.ts';
import { clip } from './placeholders.ts';

/** Where Debian's font packages and a machine's own fonts live. */
export const FONT_FOLDERS: readonly string[] = ['/usr/share/fonts', '/usr/local/share/fonts'];

/** True for a value that names a path from the root (checked by checkFontPath, not as a relative name). */
export function isFontPath(value: string): boolean {
  return value.startsWith('/');
}

/**
 * Returns the path when it names a file (or, for `folder`, a folder or the font folder itself) inside
 * one of `folders`: no "." or ".." parts, no "//", no characters a font path does not need, and no
 * link out of the folders. Throws CommandRejected otherwise.
 */
export function checkFontPath(path: string, where: string, kind: 'file' | 'folder', folders: readonly string[] = FONT_FOLDERS): string {
  const refuse = (why: string): never => {
    throw new CommandRejected(
      `${where} "${clip(path)}": ${why}; a path from the root must name a system font inside ${folders.join(' or ')} ` +
        '(or use a placeholder or a relative name inside the working folder)',
    );
  };
  if (path.length > 1024) refuse('the path is too long');
  if (!/^[\p{L}\p{M}\p{N} _\-.,/()[\]+@&]+$/u.test(path)) refuse('only letters, digits, spaces and _-.,/()[]+@& are allowed');
  const parts = path.split('/').slice(1);
  if (parts.some((part) => part === '.' || part === '..')) refuse('"." and ".." are not allowed');
  if (parts.some((part) => part === '') && !(kind === 'folder' && path.endsWith('/') && !path.endsWith('//'))) {
    refuse('empty folder names ("//" or a trailing "/") are not allowed');
  }
  const plain = kind === 'folder' ? path.replace(/\/$/, '') : path;
  const root = folders.find((folder) => plain.startsWith(`${folder}/`) || (kind === 'folder' && plain === folder));
  if (root === undefined) refuse('it is outside the font folders');
  const real = realPathIfPresent(plain);
  if (real !== undefined && !folders.some((folder) => isInside(real, realPathIfPresent(folder) ?? folder))) {
    refuse('it is a link to a place outside the font folders');
  }
  return path;
}

function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(`${folder}/`);
}

function realPathIfPresent(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined; // not on this machine: ffmpeg will say it finds no such font
  }
}
