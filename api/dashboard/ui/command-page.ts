// One command: status and progress (live until it ends, from its event stream), its error, what was asked, and its outputs
// with a player for each video, audio and image. QUEUED and PROCESSING commands can be cancelled.
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { isActive } from './commands-page.ts';
import { ErrorMessage, ProgressView, StatusBadge } from './components.ts';
import { formatMb, formatSeconds, formatTime, messageOf, safeUrl } from './format.ts';
import { html } from 'htm/preact';
import type { CommandRecord, OutputFile } from './types.ts';
import { useCommandLive } from './use-command-live.ts';

export function CommandPage({ api, id }: { api: Api; id: string }) {
  // Live from the command's event stream; polled when the stream cannot be had.
  const polled = useCommandLive(api, id);
  const c = polled.data;
  if (!c) {
    return html`<section>
      <h1>Command</h1>
      <${ErrorMessage} error=${polled.error} />
      ${polled.error ? null : html`<p class="muted">Loading…</p>`}
    </section>`;
  }
  return html`<section class="command">
    <div class="heading">
      <h1>Command <span class="id">${c.command_id}</span></h1>
      ${isActive(c.status) ? html`<${CancelButton} api=${api} id=${c.command_id} onCancelled=${polled.reload} />` : null}
    </div>
    <${ErrorMessage} error=${polled.error} />
    <dl class="facts">
      <dt>Status</dt>
      <dd><${StatusBadge} status=${c.status} /> <span class="stage">${isActive(c.status) ? (c.processing_stage ?? '') : ''}</span></dd>
      ${
        c.progress
          ? html`<dt>Progress</dt>
              <dd><${ProgressView} progress=${c.progress} /></dd>`
          : null
      }
      <dt>Created</dt>
      <dd>${formatTime(c.created_at)}</dd>
      <dt>Environment</dt>
      <dd>${c.environment_name}</dd>
      <dt>Time</dt>
      <dd>${formatSeconds(c.total_processing_seconds)} in all, ${formatSeconds(c.ffmpeg_command_run_seconds)} of ffmpeg</dd>
      <dt>vCPUs</dt>
      <dd>${c.vcpu_count}</dd>
    </dl>
    ${
      c.error_status || c.error_message
        ? html`<div class="failure" role="alert">
            <h2>Error <code class="error-status">${c.error_status ?? ''}</code></h2>
            <pre class="error-message">${c.error_message ?? ''}</pre>
          </div>`
        : null
    }
    <${RequestView} command=${c} />
    <${MetadataView} metadata=${c.metadata} />
    <h2>Outputs</h2>
    ${
      Object.keys(c.output_files).length === 0
        ? html`<p class="muted">${isActive(c.status) ? 'Outputs appear here once stored.' : 'No outputs.'}</p>`
        : html`<div class="outputs">
            ${Object.entries(c.output_files).map(([alias, f]) => html`<${OutputCard} key=${f.file_id} alias=${alias} file=${f} />`)}
          </div>`
    }
  </section>`;
}

function CancelButton({ api, id, onCancelled }: { api: Api; id: string; onCancelled: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const cancel = async () => {
    setBusy(true);
    setError(null);
    try {
      await api.cancel(id);
      onCancelled();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<span class="cancel">
    <button type="button" class="danger" disabled=${busy} onClick=${() => void cancel()}>${busy ? 'Cancelling…' : 'Cancel command'}</button>
    <${ErrorMessage} error=${error} />
  </span>`;
}

function RequestView({ command }: { command: CommandRecord }) {
  const r = command.original_request;
  if (!r) return null;
  const commands = r.ffmpeg_commands ?? (r.ffmpeg_command === undefined ? [] : [r.ffmpeg_command]);
  const outputs = typeof r.output_files === 'string' ? { [r.output_files]: '(folder)' } : (r.output_files ?? {});
  return html`<h2>Request</h2>
    ${commands.map((line, i) => html`<pre class="ffmpeg-command" key=${i}>ffmpeg ${line}</pre>`)}
    <table class="pairs">
      <tbody>
        ${Object.entries(r.input_files ?? {}).map(
          ([alias, url]) =>
            html`<tr key=${alias}>
              <th>${alias}</th>
              <td class="url">${url}</td>
            </tr>`,
        )}
        ${
          r.input_compressed_folder
            ? html`<tr>
                <th>input folder</th>
                <td class="url">${r.input_compressed_folder}</td>
              </tr>`
            : null
        }
        ${Object.entries(outputs).map(
          ([alias, name]) =>
            html`<tr key=${alias}>
              <th>${alias}</th>
              <td>${name}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

function MetadataView({ metadata }: { metadata: CommandRecord['metadata'] }) {
  const entries = Object.entries(metadata ?? {});
  if (entries.length === 0) return null;
  return html`<h2>Metadata</h2>
    <table class="pairs metadata">
      <tbody>
        ${entries.map(
          ([k, v]) =>
            html`<tr key=${k}>
              <th>${k}</th>
              <td>${String(v)}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

type PreviewKind = 'video' | 'audio' | 'image' | null;

function previewKind(f: OutputFile): PreviewKind {
  const mime = f.mime_type ?? '';
  // Playlists and zipped folders have no player here; their link opens them.
  if (mime.includes('mpegurl') || mime.includes('zip')) return null;
  if (f.file_type === 'video' || mime.startsWith('video/')) return 'video';
  if (f.file_type === 'audio' || mime.startsWith('audio/')) return 'audio';
  if (f.file_type === 'image' || mime.startsWith('image/')) return 'image';
  return null;
}

function OutputCard({ alias, file: f }: { alias: string; file: OutputFile }) {
  // The first URL is kept: a presigned URL differs at every poll and would restart the player.
  const [src] = useState(() => safeUrl(f.storage_url));
  const kind = f.is_deleted ? null : previewKind(f);
  const size = f.width && f.height ? `${f.width}×${f.height}` : '';
  return html`<figure class="output" data-alias=${alias}>
    ${kind === 'video' && src ? html`<video controls preload="metadata" src=${src}></video>` : null}
    ${kind === 'audio' && src ? html`<audio controls preload="metadata" src=${src}></audio>` : null}
    ${kind === 'image' && src ? html`<img alt=${alias} src=${src} />` : null}
    <figcaption>
      <strong>${alias}</strong>
      <span
        >${[f.file_type, f.codec, size, f.duration === null ? '' : formatSeconds(f.duration), formatMb(f.size_mbytes)]
          .filter(Boolean)
          .join(' · ')}</span
      >
      ${f.is_deleted ? html`<span class="muted">deleted</span>` : src ? html`<a href=${src} target="_blank" rel="noopener noreferrer">Open</a>` : null}
    </figcaption>
  </figure>`;
}
