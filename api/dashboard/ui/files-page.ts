// Stored files and command outputs, newest first, and direct upload: drop files on the zone (or choose
// them), each goes up in presigned parts with a progress bar, then shows here until STORED.
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { ErrorMessage, PAGE_SIZE, Pager, StatusBadge } from './components.ts';
import { fileNameOf, formatMb, formatSeconds, formatTime, messageOf, safeUrl } from './format.ts';
import { html } from 'htm/preact';
import type { StoredFile } from './types.ts';
import { uploadFile } from './upload.ts';
import { usePolling } from './use-polling.ts';

const REFRESH_MS = 3000;

interface Upload {
  id: number;
  name: string;
  fraction: number;
  state: 'uploading' | 'done' | 'failed';
  error: string | null;
}

export function FilesPage({ api }: { api: Api }) {
  const [offset, setOffset] = useState(0);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [dragging, setDragging] = useState(false);
  const [isPrivate, setPrivate] = useState(false);
  const files = usePolling(
    () => api.listFiles(PAGE_SIZE, offset),
    () => REFRESH_MS,
    [api, offset],
  );

  const update = (id: number, change: Partial<Upload>) => setUploads((all) => all.map((u) => (u.id === id ? { ...u, ...change } : u)));
  const start = (list: FileList | null) => {
    for (const file of Array.from(list ?? [])) {
      const id = Math.random();
      setUploads((all) => [{ id, name: file.name, fraction: 0, state: 'uploading', error: null }, ...all]);
      uploadFile(api, file, isPrivate, (fraction) => update(id, { fraction }))
        .then(() => {
          update(id, { state: 'done', fraction: 1 });
          files.reload();
        })
        .catch((err: unknown) => update(id, { state: 'failed', error: messageOf(err) }));
    }
  };
  const drop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    start(e.dataTransfer?.files ?? null);
  };
  const over = (e: DragEvent) => {
    e.preventDefault();
    setDragging(true);
  };

  return html`<section>
    <h1>Files</h1>
    <div class=${`drop-zone${dragging ? ' dragging' : ''}`} onDragOver=${over} onDragLeave=${() => setDragging(false)} onDrop=${drop}>
      <p>Drop files here to upload them, or</p>
      <label class="button">
        Choose files
        <input
          id="file-input"
          type="file"
          multiple
          onChange=${(e: Event) => {
            const input = e.target as HTMLInputElement;
            start(input.files);
            input.value = '';
          }}
        />
      </label>
      <label class="check"
        ><input type="checkbox" checked=${isPrivate} onChange=${(e: Event) => setPrivate((e.target as HTMLInputElement).checked)} />
        private</label
      >
    </div>
    ${
      uploads.length > 0
        ? html`<ul class="uploads">
            ${uploads.map(
              (u) =>
                html`<li key=${u.id} class="upload" data-state=${u.state}>
                  <span class="name">${u.name}</span>
                  <progress max="100" value=${Math.round(u.fraction * 100)}></progress>
                  <span class="percent">${Math.round(u.fraction * 100)}%</span>
                  <span class="state">${u.state === 'done' ? 'uploaded' : u.state}</span>
                  <${ErrorMessage} error=${u.error} />
                </li>`,
            )}
          </ul>`
        : null
    }
    <${ErrorMessage} error=${files.error} />
    ${files.data?.length === 0 && offset === 0 ? html`<p class="muted">No files yet.</p>` : null}
    ${
      files.data && files.data.length > 0
        ? html`<table class="list files">
            <thead>
              <tr>
                <th>Created</th>
                <th>Name</th>
                <th>Status</th>
                <th>Kind</th>
                <th>Media</th>
                <th>Size</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              ${files.data.map((f) => html`<${FileRow} key=${f.file_id} api=${api} file=${f} onDeleted=${files.reload} />`)}
            </tbody>
          </table>`
        : null
    }
    <${Pager} offset=${offset} count=${files.data?.length ?? 0} onOffset=${setOffset} />
  </section>`;
}

function FileRow({ api, file: f, onDeleted }: { api: Api; file: StoredFile; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const url = safeUrl(f.storage_url);
  const remove = async () => {
    try {
      await api.deleteFile(f.file_id);
      onDeleted();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const media = [f.file_type, f.width && f.height ? `${f.width}×${f.height}` : '', f.duration === null ? '' : formatSeconds(f.duration)];
  return html`<tr data-file-id=${f.file_id}>
    <td>${formatTime(f.created_at)}</td>
    <td class="name">${fileNameOf(f.original_file_url)}${f.is_private ? html` <span class="muted">(private)</span>` : null}</td>
    <td>
      <${StatusBadge} status=${f.status} />
      ${
        f.error_status
          ? html`<div class="error-status">${f.error_status}</div>
              <div class="error-message">${f.external_error_message ?? ''}</div>`
          : null
      }
    </td>
    <td>${f.service_store_type === 'OUTPUT' ? 'output' : 'stored'}</td>
    <td>${media.filter(Boolean).join(' · ')}</td>
    <td>${formatMb(f.size_mbytes)}</td>
    <td class="actions">
      ${
        url && f.status === 'STORED' && !f.is_private
          ? html`<a href=${url} target="_blank" rel="noopener noreferrer">Open</a>
              <a href=${`#/new?input=${encodeURIComponent(url)}`}>Use as input</a>`
          : null
      }
      ${
        confirming
          ? html`<button type="button" class="danger" onClick=${() => void remove()}>Really delete</button>
              <button type="button" class="link" onClick=${() => setConfirming(false)}>Keep</button>`
          : html`<button type="button" class="link" onClick=${() => setConfirming(true)}>Delete</button>`
      }
      <${ErrorMessage} error=${error} />
    </td>
  </tr>`;
}
