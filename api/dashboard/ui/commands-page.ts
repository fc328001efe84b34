// The commands, newest first, with live status, and ffmpeg's progress for those still running.
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { ErrorMessage, PAGE_SIZE, Pager, ProgressView, StatusBadge } from './components.ts';
import { formatSeconds, formatTime } from './format.ts';
import { html } from 'htm/preact';
import type { CommandListItem } from './types.ts';
import { usePolling } from './use-polling.ts';

/** One list request per refresh (its items carry the running commands' progress): 20 a minute. */
const REFRESH_MS = 3000;

export const isActive = (status: string) => status === 'QUEUED' || status === 'PROCESSING';

export function CommandsPage({ api }: { api: Api }) {
  const [offset, setOffset] = useState(0);
  const { data, error } = usePolling(
    async () => ({ items: await api.listCommands(PAGE_SIZE, offset) }),
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
              ${data.items.map((c) => html`<${CommandRow} key=${c.command_id} command=${c} />`)}
            </tbody>
          </table>`
        : null
    }
    <${Pager} offset=${offset} count=${data?.items.length ?? 0} onOffset=${setOffset} />
  </section>`;
}

function CommandRow({ command: c }: { command: CommandListItem }) {
  return html`<tr data-command-id=${c.command_id}>
    <td>${formatTime(c.created_at)}</td>
    <td><a class="id" href=${`#/commands/${c.command_id}`}>${c.command_id}</a></td>
    <td><${StatusBadge} status=${c.status} /></td>
    <td>
      ${isActive(c.status) ? html`<span class="stage">${c.processing_stage ?? ''}</span>` : null}
      <${ProgressView} progress=${c.progress} />
    </td>
    <td class="error-status">${c.error_status ?? ''}</td>
    <td>${c.ffmpeg_command_run_seconds > 0 ? formatSeconds(c.ffmpeg_command_run_seconds) : ''}</td>
    <td>${c.output_file_count}</td>
  </tr>`;
}
