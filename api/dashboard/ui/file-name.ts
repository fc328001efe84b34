// init-upload takes names of letters, digits, '_', '-' and '.' only (at most 255): a dropped file's name
// is made to fit, keeping its extension, which tells the service (and ffmpeg) the file's type.
const MAX_NAME = 255;

export function uploadName(name: string): string {
  // é -> e + a combining accent (dropped) -> e
  let safe = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^A-Za-z0-9_.-]/g, '_');
  if (safe.length > MAX_NAME) {
    const dot = safe.lastIndexOf('.');
    const extension = dot > 0 && safe.length - dot <= 16 ? safe.slice(dot) : '';
    safe = safe.slice(0, MAX_NAME - extension.length) + extension;
  }
  return safe.replace(/^\.+$/, '') || 'file';
}
