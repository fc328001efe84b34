// Turns a parsed argument back into argv text, replacing each placeholder by its file's path escaped
// so that ffmpeg reads the path back exactly, whatever characters it holds.
//
// A filter option value inside a filtergraph is read by av_get_token twice: once by the graph
// parser (terms "[],;") and once by the filter's option parser (terms ":"). Escaping works level by
// level from the innermost: the text that level must read, then that text escaped for the level
// around it.
import type { Arg, Quoting } from './parsed-command.ts';

// Outside quotes, av_get_token turns `\c` into c for every c. Characters that are never special are
// left alone for readable logs; the first one is always escaped, so that a path at the start of a
// filter value can never read as `key=` (a key is [A-Za-z0-9-_/.]* followed by '=').
const NEVER_SPECIAL = /^[A-Za-z0-9_./-]$/;

/** Text that one token level, reading it in the given quoting, turns back into `text`. */
export function escapeForLevel(text: string, quoting: Quoting): string {
  // Inside '...' only the quote itself ends the literal text: close, escape a quote, reopen.
  if (quoting === 'quoted') return text.replaceAll("'", "'\\''");
  let out = '';
  let first = true;
  for (const c of text) {
    out += first || !NEVER_SPECIAL.test(c) ? `\\${c}` : c;
    first = false;
  }
  return out;
}

/** The path as it must be written where a placeholder stands; `levels` is outermost first. */
export function escapePath(path: string, levels: readonly Quoting[]): string {
  return levels.reduceRight((text, quoting) => escapeForLevel(text, quoting), path);
}

/** The argv text of an argument, with `resolve` giving each alias's path in the working folder. */
export function renderArg(arg: Arg, resolve: (alias: string) => string): string {
  if (typeof arg === 'string') return arg;
  if ('alias' in arg) return resolve(arg.alias);
  return arg.template.map((part) => (typeof part === 'string' ? part : escapePath(resolve(part.alias), part.levels))).join('');
}
