// File placeholders in ffmpeg_command: `{{alias}}` stands for a file the service downloads (in_...)
// or stores (out_...). A placeholder must be a whole argument, so the service can swap it for a local
// path without ever building a path out of user text.
import { CommandRejected } from './parsed-command.ts';

const ALIAS = /^[A-Za-z0-9_]+$/;
const WHOLE_PLACEHOLDER = /^\{\{([^{}]*)\}\}$/;
/** Automation platforms (n8n, Make...) treat `{{` specially, so users may write `\{\{alias\}\}`. */
const ESCAPED_PLACEHOLDER = /\\?\{\\?\{([A-Za-z0-9_]+)\\?\}\\?\}/g;

export function isValidAlias(alias: string): boolean {
  return ALIAS.test(alias);
}

/** Turns every backslash-escaped placeholder (`\{\{in_1\}\}`, or any mix) into `{{in_1}}`. */
export function unescapePlaceholders(text: string): string {
  return text.replace(ESCAPED_PLACEHOLDER, '{{$1}}');
}

/**
 * The alias when the whole token is a placeholder, undefined when the token holds no placeholder.
 * Throws when the token holds a malformed placeholder or one embedded in other text.
 */
export function placeholderAlias(token: string): string | undefined {
  const whole = WHOLE_PLACEHOLDER.exec(token);
  if (whole) {
    const alias = whole[1];
    if (!isValidAlias(alias)) {
      throw new CommandRejected(
        `"${token}" is not a valid placeholder: an alias has only letters, digits and underscores, e.g. {{in_1}}`,
      );
    }
    return alias;
  }
  if (token.includes('{{') || token.includes('}}')) {
    throw new CommandRejected(
      `"${token}" contains a placeholder inside a larger argument; a {{alias}} placeholder must be a whole argument on its own`,
    );
  }
  return undefined;
}
