// The webhook of this key's environment: its URL, its signing secret (shown once, when set or
// rotated), a test delivery, and the delivery log with every attempt.
import { useState } from 'preact/hooks';
import { ApiError, type Api } from './api.ts';
import { ErrorMessage, PAGE_SIZE, Pager, StatusBadge, withCode } from './components.ts';
import { formatTime, messageOf } from './format.ts';
import { html } from 'htm/preact';
import type { Delivery, DeliveryAttempt, Webhook } from './types.ts';
import { usePolling } from './use-polling.ts';

const REFRESH_MS = 3000;
const ABOUT =
  'When a command ends (SUCCESS or FAILED) or a stored file ends (STORED or FAILED), the service POSTs its record to this ' +
  'URL, signed as the Standard Webhooks specification says (`webhook-id`, `webhook-timestamp`, `webhook-signature`), and ' +
  'retries for about a day until it answers 2xx.';

export function WebhookPage({ api }: { api: Api }) {
  // 404: no webhook is set for this environment.
  const current = usePolling<Webhook | null>(
    async () => {
      try {
        return await api.webhook();
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }
    },
    () => null,
    [api],
  );
  const [secret, setSecret] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [logRound, setLogRound] = useState(0);

  return html`<section class="webhook">
    <h1>Webhook</h1>
    <p class="hint">${withCode(ABOUT)}</p>
    <${ErrorMessage} error=${current.error} />
    ${current.loaded ? null : html`<p class="muted">Loading…</p>`}
    ${
      current.loaded
        ? html`<${WebhookForm}
            key=${current.data?.url ?? ''}
            api=${api}
            webhook=${current.data}
            onSaved=${(s: string | null, message: string) => {
              setSecret(s);
              setNotice(message);
              current.reload();
            }}
            onTest=${(message: string) => {
              setNotice(message);
              setLogRound((r) => r + 1);
            }}
          />`
        : null
    }
    ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
    ${secret ? html`<${SecretOnce} secret=${secret} onDone=${() => setSecret(null)} />` : null}
    <${DeliveryLog} api=${api} round=${logRound} />
  </section>`;
}

function WebhookForm(p: {
  api: Api;
  webhook: Webhook | null;
  onSaved: (secret: string | null, message: string) => void;
  onTest: (message: string) => void;
}) {
  const [url, setUrl] = useState(p.webhook?.url ?? '');
  const [rotate, setRotate] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const act = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  const save = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const saved = await p.api.setWebhook(url.trim(), rotate);
      setRotate(false);
      p.onSaved(
        saved.secret,
        saved.secret ? 'Webhook saved with a new signing secret.' : 'Webhook saved; its signing secret is unchanged.',
      );
    });
  };
  const remove = () =>
    act(async () => {
      await p.api.deleteWebhook();
      setConfirmDelete(false);
      p.onSaved(null, 'Webhook removed.');
    });
  const test = () =>
    act(async () => {
      const { delivery_id } = await p.api.testWebhook();
      p.onTest(`Test delivery ${delivery_id} queued.`);
    });

  return html`<form class="webhook-form" onSubmit=${save}>
    <label for="webhook-url"
      >URL${p.webhook ? html` <span class="muted">(environment ${p.webhook.environment_name}, set ${formatTime(p.webhook.updated_at)})</span>` : null}</label
    >
    <input
      id="webhook-url"
      type="url"
      spellcheck="false"
      placeholder="https://example.com/ffmpeg-webhook"
      value=${url}
      onInput=${(e: Event) => setUrl((e.target as HTMLInputElement).value)}
    />
    ${
      p.webhook
        ? html`<label class="check"
            ><input
              id="rotate-secret"
              type="checkbox"
              checked=${rotate}
              onChange=${(e: Event) => setRotate((e.target as HTMLInputElement).checked)}
            />
            new signing secret</label
          >`
        : html`<p class="muted">No webhook is set for this environment.</p>`
    }
    <div class="row">
      <button type="submit" disabled=${busy}>Save</button>
      ${
        p.webhook
          ? html`<button type="button" disabled=${busy} onClick=${() => void test()}>Send test</button> ${
                confirmDelete
                  ? html`<button type="button" class="danger" disabled=${busy} onClick=${() => void remove()}>Really remove</button>
                      <button type="button" class="link" onClick=${() => setConfirmDelete(false)}>Keep</button>`
                  : html`<button type="button" class="link" onClick=${() => setConfirmDelete(true)}>Remove webhook</button>`
              }`
          : null
      }
    </div>
    <${ErrorMessage} error=${error} />
  </form>`;
}

/** The signing secret, shown once: the API does not show it again. */
function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = () =>
    navigator.clipboard.writeText(secret).then(
      () => setCopied('Copied.'),
      () => setCopied('Copying was not allowed: select the secret and copy it.'),
    );
  return html`<div class="secret" role="status">
    <p><strong>Signing secret: copy it now, it is not shown again.</strong> Your receiver verifies signatures with it.</p>
    <input id="webhook-secret" readonly value=${secret} onFocus=${(e: Event) => (e.target as HTMLInputElement).select()} />
    <div class="row">
      <button type="button" onClick=${() => void copy()}>Copy</button>
      <button type="button" class="link" onClick=${onDone}>I have kept it</button>
      ${copied ? html`<span class="muted">${copied}</span>` : null}
    </div>
  </div>`;
}

function DeliveryLog({ api, round }: { api: Api; round: number }) {
  const [offset, setOffset] = useState(0);
  const log = usePolling(
    () => api.deliveries(PAGE_SIZE, offset),
    () => REFRESH_MS,
    [api, offset, round],
  );
  return html`<h2>Deliveries</h2>
    <${ErrorMessage} error=${log.error} />
    ${log.data?.length === 0 && offset === 0 ? html`<p class="muted">No deliveries yet.</p>` : null}
    ${
      log.data && log.data.length > 0
        ? html`<table class="list deliveries">
            <thead>
              <tr>
                <th>Created</th>
                <th>Event</th>
                <th>Subject</th>
                <th>Status</th>
                <th>Attempts</th>
                <th>Next attempt</th>
              </tr>
            </thead>
            <tbody>
              ${log.data.map((d) => html`<${DeliveryRow} key=${d.delivery_id} delivery=${d} />`)}
            </tbody>
          </table>`
        : null
    }
    <${Pager} offset=${offset} count=${log.data?.length ?? 0} onOffset=${setOffset} />`;
}

function attemptText(a: DeliveryAttempt): string {
  const answer = a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`;
  return `${formatTime(a.at)}: ${answer}${a.error ? ` (${a.error})` : ''}, ${a.duration_ms} ms`;
}

function DeliveryRow({ delivery: d }: { delivery: Delivery }) {
  const subject =
    d.subject_id && d.event_type.startsWith('command.')
      ? html`<a class="id" href=${`#/commands/${d.subject_id}`}>${d.subject_id}</a>`
      : html`<span class="id">${d.subject_id ?? ''}</span>`;
  return html`<tr data-delivery-id=${d.delivery_id}>
    <td>${formatTime(d.created_at)}</td>
    <td>${d.event_type}</td>
    <td>${subject}</td>
    <td><${StatusBadge} status=${d.status} /></td>
    <td>
      ${
        d.attempts.length === 0
          ? '0'
          : html`<details>
              <summary>${d.attempt_count}</summary>
              <ol class="attempts">
                ${d.attempts.map((a, i) => html`<li key=${i}>${attemptText(a)}</li>`)}
              </ol>
            </details>`
      }
    </td>
    <td>${formatTime(d.next_attempt_at)}</td>
  </tr>`;
}
