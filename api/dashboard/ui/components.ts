// Small pieces that several pages show.
import { html } from 'htm/preact';
import type { Progress } from './types.ts';

const STATUS_CLASSES: Record<string, string> = {
  QUEUED: 'waiting',
  PROCESSING: 'running',
  PREPARED_FFMPEG_COMMAND: 'running',
  UPLOADED: 'running',
  DOWNLOADING: 'running',
  DOWNLOADED: 'running',
  PENDING: 'waiting',
  SUCCESS: 'ok',
  STORED: 'ok',
  DELIVERED: 'ok',
  FAILED: 'failed',
};

export function StatusBadge({ status }: { status: string }) {
  return html`<span class="badge ${STATUS_CLASSES[status] ?? 'waiting'}" data-status=${status}>${status}</span>`;
}

/** ffmpeg's progress: a bar when the inputs' duration is known, else how far it got and how fast. */
export function ProgressView({ progress }: { progress: Progress | null | undefined }) {
  if (!progress) return null;
  const speed = progress.speed === null ? '' : ` at ${progress.speed}x`;
  if (progress.percent === null) return html`<span class="progress-text">${progress.out_time_seconds.toFixed(1)} s done${speed}</span>`;
  return html`<span class="progress-view">
    <progress max="100" value=${progress.percent}></progress>
    <span class="progress-text">${progress.percent.toFixed(1)}%${speed}</span>
  </span>`;
}

/**
 * Prose in which `backquoted` parts show as code. Kept in one string: htm drops whitespace that holds a
 * line break next to an element, so a template's line breaks (which prettier chooses) could glue words.
 */
export function withCode(text: string) {
  return text.split('`').map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : part));
}

export function ErrorMessage({ error }: { error: string | null | undefined }) {
  return error ? html`<p class="error" role="alert">${error}</p>` : null;
}

export const PAGE_SIZE = 50;

/** Newer / older pages of a list that is newest first. */
export function Pager({ offset, count, onOffset }: { offset: number; count: number; onOffset: (offset: number) => void }) {
  if (offset === 0 && count < PAGE_SIZE) return null;
  return html`<div class="pager">
    <button type="button" disabled=${offset === 0} onClick=${() => onOffset(Math.max(0, offset - PAGE_SIZE))}>Newer</button>
    <span>${offset + 1}–${offset + count}</span>
    <button type="button" disabled=${count < PAGE_SIZE} onClick=${() => onOffset(offset + PAGE_SIZE)}>Older</button>
  </div>`;
}
