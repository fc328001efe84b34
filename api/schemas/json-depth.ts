// Nesting depth of a JSON text, measured before it is parsed: validation walks the parsed value
// recursively, so a body of a few hundred KB of '[' would overflow the stack (a 500). No request of
// the API nests deeper than a handful of levels.
export const MAX_JSON_DEPTH = 32;

/** True when arrays and objects in `text` nest deeper than `limit`; brackets inside strings do not count. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > limit) return true;
    } else if (ch === 0x5d || ch === 0x7d) {
      depth--;
    }
  }
  return false;
}
