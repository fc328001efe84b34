// Formatting of API values for display; all results are plain text (preact escapes them).

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function formatSeconds(seconds: number | null | undefined): string {
  return seconds === null || seconds === undefined ? '' : `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
}

export function formatMb(mb: number | null | undefined): string {
  return mb === null || mb === undefined ? '' : `${mb < 1 ? mb.toFixed(3) : mb.toFixed(1)} MB`;
}

/** A URL to link to or load media from: http(s) only, so no value from the API becomes a javascript: link. */
export function safeUrl(url: string | null | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const parsed = new URL(url, location.href);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

/** The name at the end of a URL (what a stored file was called), or the text itself. */
export function fileNameOf(url: string | null | undefined): string {
  if (!url) return '';
  try {
    const path = new URL(url).pathname;
    return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)) || url;
  } catch {
    return url;
  }
}
