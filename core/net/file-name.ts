// File names taken from input URLs. The spec says "the file name must appear at the end of the URL":
// the last path segment is the name, the query string and fragment are not part of it.

const MAX_NAME_LENGTH = 255;
const MAX_LOCAL_NAME_LENGTH = 100;
const EXTENSION = /^[A-Za-z0-9]{1,16}$/;

/**
 * The file name at the end of an http(s) URL's path, percent-decoded; null when the URL has none:
 * '/', '/dir/', '.', '..', no extension ('/download'), or a decoded name holding '/', '\', NUL or
 * another control character. `https://h/a/clip.final.mov?sig=x` -> 'clip.final.mov'.
 */
export function fileNameFromUrl(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  const lastSegment = parsed.pathname.slice(parsed.pathname.lastIndexOf('/') + 1);
  let name: string;
  try {
    name = decodeURIComponent(lastSegment);
  } catch {
    return null; // malformed percent-encoding
  }
  if (name.length === 0 || name.length > MAX_NAME_LENGTH) return null;
  if (/[/\\\u0000-\u001f\u007f]/.test(name)) return null;
  const dot = name.lastIndexOf('.');
  if (dot === -1 || !EXTENSION.test(name.slice(dot + 1))) return null;
  if (!/[^.]/.test(name.slice(0, dot))) return null; // '.mp4', '...mp4': nothing before the extension
  return name;
}

/**
 * Maps any name to a safe local file name: ASCII letters, digits, '_', '-' and '.', never starting
 * with '.' (hidden), '-' (ffmpeg would read it as an option) or '_', at most 100 characters, keeping the
 * extension when there is a sensible one.
 */
export function safeLocalName(name: string): string {
  const ascii = name.normalize('NFKD').replace(/\p{M}/gu, ''); // 'vidéo' -> 'video'
  const cleaned = ascii.replace(/[^A-Za-z0-9_.-]+/g, '_');
  const dot = cleaned.lastIndexOf('.');
  const hasExtension = dot > 0 && EXTENSION.test(cleaned.slice(dot + 1));
  const extension = hasExtension ? cleaned.slice(dot) : '';
  let base = (hasExtension ? cleaned.slice(0, dot) : cleaned).replace(/^[._-]+/, '');
  base = base.slice(0, MAX_LOCAL_NAME_LENGTH - extension.length).replace(/\.+$/, '');
  if (base === '') base = 'file';
  return base + extension;
}
