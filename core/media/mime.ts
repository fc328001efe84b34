// MIME types by file extension, for probed media and for serving stored files.
// Only media and archive types are named: a file that would render as a page in a browser (.html,
// .svg, .xml, ...) is served as application/octet-stream, because user files are hostile.

export const FALLBACK_CONTENT_TYPE = 'application/octet-stream';

/** Lookup by a name that comes from a client: "constructor" must not find Object.prototype's. */
export function ownValue<T>(table: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

const TYPE_BY_EXTENSION: Record<string, string> = {
  // video containers
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
  mkv: 'video/x-matroska',
  avi: 'video/x-msvideo',
  flv: 'video/x-flv',
  ts: 'video/mp2t',
  m2ts: 'video/mp2t',
  mts: 'video/mp2t',
  mpg: 'video/mpeg',
  mpeg: 'video/mpeg',
  ogv: 'video/ogg',
  '3gp': 'video/3gpp',
  '3g2': 'video/3gpp2',
  // audio
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
  wav: 'audio/wav',
  flac: 'audio/flac',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
  mka: 'audio/x-matroska',
  weba: 'audio/webm',
  // images
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  avif: 'image/avif',
  // streaming manifests and subtitles
  m3u8: 'application/vnd.apple.mpegurl',
  mpd: 'application/dash+xml',
  vtt: 'text/vtt',
  srt: 'application/x-subrip',
  ass: 'text/x-ssa',
  ssa: 'text/x-ssa',
  // other
  zip: 'application/zip',
  txt: 'text/plain',
  json: 'application/json',
};

/** Containers that hold either video or audio: the MIME type follows what is inside. */
const AUDIO_TYPE_OF_VIDEO_CONTAINER: Record<string, string> = {
  'video/mp4': 'audio/mp4',
  'video/webm': 'audio/webm',
  'video/x-matroska': 'audio/x-matroska',
  'video/ogg': 'audio/ogg',
  'video/3gpp': 'audio/3gpp',
  'video/3gpp2': 'audio/3gpp2',
};
const VIDEO_TYPE_OF_AUDIO_CONTAINER: Record<string, string> = {
  'audio/ogg': 'video/ogg',
  'audio/webm': 'video/webm',
  'audio/x-matroska': 'video/x-matroska',
  'audio/mp4': 'video/mp4',
};

/** Lower-case extension without the dot, or '' when the name has none. */
export function fileExtension(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

/** Content-Type for serving a stored file, by its name only. */
export function contentTypeForFileName(name: string): string {
  return ownValue(TYPE_BY_EXTENSION, fileExtension(name)) ?? FALLBACK_CONTENT_TYPE;
}

/** MIME type of a probed file: by extension, corrected by what the probe found inside. */
export function mimeTypeForMedia(name: string, fileType: string): string {
  const byName = contentTypeForFileName(name);
  if (fileType === 'audio') return ownValue(AUDIO_TYPE_OF_VIDEO_CONTAINER, byName) ?? byName;
  if (fileType === 'video') return ownValue(VIDEO_TYPE_OF_AUDIO_CONTAINER, byName) ?? byName;
  return byName;
}
