// The commands, newest first, with live status, and ffmpeg's progress for those still running.
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { ErrorMessage, PAGE_SIZE, Pager, ProgressView, StatusBadge } from './components.ts';
import { formatSeconds, formatTime } from './format.ts';
import { html } from 'htm/preact';
import type { CommandListItem, Progress } from './types.ts';
import { usePolling } from './use-polling.ts';

const REFRESH_MS = 3000;
/**
 * Running commands whose progress is read (one poll each) at every refresh: with the list, at most 80
 * requests a minute, within the smallest plan's rate limit (120) and leaving room for the other pages.
 */
const PROGRESS_READS = 3;

export const isActive = (status: string) => status === 'QUEUED' || status === 'PROCESSING';

export function CommandsPage({ api }: { api: Api }) {
  const [offset, setOffset] = useState(0);
  const { data, error } = usePolling(
    async () => {
      const items = await api.listCommands(PAGE_SIZE, offset);
      // The list item has no progress: the poll record of each running command has it.
      const running = items.filter((c) => c.status === 'PROCESSING').slice(0, PROGRESS_READS);
      const records = await Promise.all(running.map((c) => api.command(c.command_id, false).catch(() => null)));
      const progress = new Map<string, Progress | null | undefined>(records.flatMap((r) => (r ? [[r.command_id, r.progress]] : [])));
      return { items, progress };
    },
    () => REFRESH_MS,
    [api, offset],
  );

  return html`<section>
    <div class="heading">
      <h1>Commands</h1>
      <a class="button" href="#/new">New command</a>
    </div>
    <${ErrorMessage} error=${error} />
    ${data === null && !error ? html`<p class="muted">Loading…</p>` : null}
    ${data?.items.length === 0 && offset === 0 ? html`<p class="muted">No commands yet. <a href="#/new">Submit one</a>.</p>` : null}
    ${
      data && data.items.length > 0
        ? html`<table class="list commands">
            <thead>
              <tr>
                <th>Created</th>
                <th>Command</th>
                <th>Status</th>
                <th>Stage / progress</th>
                <th>Error</th>
                <th>FFmpeg</th>
                <th>Outputs</th>
              </tr>
            </thead>
            <tbody>
              ${data.items.map((c) => html`<${CommandRow} key=${c.command_id} command=${c} progress=${data.progress.get(c.command_id)} />`)}
            </tbody>
          </table>`
        : null
    }
    <${Pager} offset=${offset} count=${data?.items.length ?? 0} onOffset=${setOffset} />
  </section>`;
}

function CommandRow({ command: c, progress }: { command: CommandListItem; progress: Progress | null | undefined }) {
  return html`<tr data-command-id=${c.command_id}>
    <td>${formatTime(c.created_at)}</td>
    <td><a class="id" href=${`#/commands/${c.command_id}`}>${c.command_id}</a></td>
    <td><${StatusBadge} status=${c.status} /></td>
    <td>
      ${isActive(c.status) ? html`<span class="stage">${c.processing_stage ?? ''}</span>` : null}
      <${ProgressView} progress=${progress} />
    </td>
    <td class="error-status">${c.error_status ?? ''}</td>
    <td>${c.ffmpeg_command_run_seconds > 0 ? formatSeconds(c.ffmpeg_command_run_seconds) : ''}</td>
    <td>${c.output_file_count}</td>
  </tr>`;
}
