// Content types given by a client for a stored object are checked: the value ends up in a response
// header. Without one, the type follows the key's file name (core/media/mime.ts).
/** `type/subtype[; params]` in printable ASCII, or null: the value ends up in a response header. */
export function normalizeContentType(value: string | null | undefined): string | null {
  const trimmed = value?.trim() ?? '';
  if (trimmed.length === 0 || trimmed.length > 255) return null;
  if (!/^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;[\x20-\x7e]*)?$/.test(trimmed)) return null;
  return trimmed;
}
