// File placeholders in ffmpeg_command: `{{alias}}` stands for a file the service downloads (in_...)
// or stores (out_...). A placeholder may stand anywhere inside an argument; the argument builder
// swaps it for the file's local path, escaped for where it stands, so no path is ever built from
// user text.
import { CommandRejected } from './parsed-command.ts';

const ALIAS = /^[A-Za-z0-9_]+$/;
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;
/** Automation platforms (n8n, Make...) treat `{{` specially, so users may write `\{\{alias\}\}`. */
const ESCAPED_PLACEHOLDER = /\\?\{\\?\{([A-Za-z0-9_]+)\\?\}\\?\}/g;

/** A piece of an argument: literal text, or a placeholder. */
export type ArgPiece = string | { alias: string };

export function isValidAlias(alias: string): boolean {
  return ALIAS.test(alias);
}

/** Turns every backslash-escaped placeholder (`\{\{in_1\}\}`, or any mix) into `{{in_1}}`. */
export function unescapePlaceholders(text: string): string {
  return text.replace(ESCAPED_PLACEHOLDER, '{{$1}}');
}

/** Splits an argument into literal text and placeholders. Throws for a malformed placeholder. */
export function splitPlaceholders(token: string): ArgPiece[] {
  const pieces: ArgPiece[] = [];
  let last = 0;
  const literal = (text: string): void => {
    if (text.includes('{{') || text.includes('}}')) {
      throw new CommandRejected(`"${clip(token)}" has an unbalanced "{{" or "}}"; a placeholder is written {{alias}}`);
    }
    if (text !== '') pieces.push(text);
  };
  for (const match of token.matchAll(PLACEHOLDER)) {
    const alias = match[1];
    if (!isValidAlias(alias)) {
      throw new CommandRejected(
        `"${match[0]}" is not a valid placeholder: an alias has only letters, digits and underscores, e.g. {{in_1}}`,
      );
    }
    literal(token.slice(last, match.index));
    pieces.push({ alias });
    last = match.index + match[0].length;
  }
  literal(token.slice(last));
  return pieces;
}

/** The alias when the argument is exactly one placeholder. */
export function wholePlaceholder(pieces: ArgPiece[]): string | undefined {
  return pieces.length === 1 && typeof pieces[0] !== 'string' ? pieces[0].alias : undefined;
}

// To parse a filtergraph that holds placeholders, each placeholder is replaced by one mark
// character, which no level of ffmpeg's escaping treats specially. The parser then sees the structure
// as ffmpeg will, and reports for each mark how it was quoted. Marks are lone low surrogates
// (U+DC00 + n): no well-formed text holds one, and a command must be well-formed to reach ffmpeg.
const FIRST_MARK = 0xdc00;
const LAST_MARK = 0xdfff;

/** True when the text has a lone surrogate (it cannot be passed to a program as UTF-8). */
export function hasLoneSurrogate(text: string): boolean {
  return /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

/** The argument with placeholder number i (0-based, in order) replaced by its mark. */
export function markPlaceholders(pieces: ArgPiece[]): string {
  let index = 0;
  return pieces
    .map((piece) => {
      if (typeof piece === 'string') return piece;
      if (FIRST_MARK + index > LAST_MARK) throw new CommandRejected('an argument has too many placeholders');
      return String.fromCharCode(FIRST_MARK + index++);
    })
    .join('');
}

/** The placeholder number a mark character stands for, or undefined for any other character. */
export function markIndex(c: string): number | undefined {
  const code = c.charCodeAt(0);
  return c.length === 1 && code >= FIRST_MARK && code <= LAST_MARK ? code - FIRST_MARK : undefined;
}

export function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
