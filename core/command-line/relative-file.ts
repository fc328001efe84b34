// File names written in the command itself (not placeholders) must name something inside the
// command's working folder: relative, without "..", without a protocol prefix.
import { CommandRejected } from './parsed-command.ts';
import { clip } from './placeholders.ts';

export interface RelativeFileRules {
  /** What the name is, for the hint in messages. */
  role: 'input' | 'output' | 'option' | 'folder';
  /** Allow the * and ? wildcards of -pattern_type glob. */
  glob?: boolean;
  /** A name without folders. */
  plainName?: boolean;
}

const HINTS = {
  input: 'use an {{in_...}} placeholder or a relative name inside the working folder',
  output: 'use an {{out_...}} placeholder or a relative name inside the working folder',
  option: 'use a relative name inside the working folder',
  folder: 'use a relative folder inside the working folder, such as "." for the folder itself',
};

/** Returns the name when it stays inside the working folder; throws CommandRejected otherwise. */
export function checkRelativeFile(name: string, where: string, rules: RelativeFileRules): string {
  const refuse = (why: string): never => {
    throw new CommandRejected(`${where} "${clip(name)}": ${why}; ${HINTS[rules.role]}`);
  };
  if (name === '') refuse('the file name is empty');
  if (name === '-' || name.startsWith('pipe:')) refuse('pipes are not available');
  if (/[\x00-\x1f\x7f]/.test(name)) refuse('control characters are not allowed');
  if (name.startsWith('/')) refuse('absolute paths are not allowed');
  // libavformat opens a name with a protocol-like prefix and a colon (file:, http:, concat:, ...)
  // through that protocol, so no colon at all.
  if (name.includes(':')) refuse('protocols (like file:, http:, concat:) and ":" are not allowed');
  if (name.includes('\\')) refuse('backslashes are not allowed');
  if (name.includes('~')) refuse('"~" is not allowed');
  if (name.startsWith('-')) refuse('a file name cannot start with "-"');
  if (name.length > 1024) refuse('the name is too long');
  const parts = name.split('/');
  if (parts.includes('..')) refuse('".." is not allowed');
  if (parts.includes('')) refuse('empty folder names ("//" or a trailing "/") are not allowed');
  if (rules.plainName && parts.length > 1) refuse('it must be a plain file name without folders');
  // Names as people give files in a zip ("My Subs (FR).srt", "vidéo 1.mp4"): confinement, not this
  // check, keeps the command inside its folder, so any letter, digit, space or everyday punctuation
  // will do. The glob wildcards * ? only with -pattern_type glob, where they mean something.
  const allowed = rules.glob ? /^[\p{L}\p{M}\p{N} _\-.,/%'"()[\]{}&+=@#!$^*?]+$/u : /^[\p{L}\p{M}\p{N} _\-.,/%'"()[\]{}&+=@#!$^]+$/u;
  if (!allowed.test(name)) {
    refuse(
      `only letters, digits, spaces and ${rules.glob ? 'the wildcards * ? and ' : ''}the punctuation _-.,/%'"()[]{}&+=@#!$^ are allowed`,
    );
  }
  return name;
}
