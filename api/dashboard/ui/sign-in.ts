// Sign in with an API key: checked with one API call before it is kept for the tab's session.
import { useState } from 'preact/hooks';
import { Api, ApiError } from './api.ts';
import { ErrorMessage, withCode } from './components.ts';
import { messageOf } from './format.ts';
import { html } from 'htm/preact';

const KEY_HINT =
  'The key stays in this browser tab only (sessionStorage) and is sent in the `X-API-KEY` header. A new embedded service ' +
  'writes its first key to `data/initial-api-key`; `npm run cli -- keys create ACCOUNT` makes others.';

export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(notice);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) return setError('Enter an API key.');
    setBusy(true);
    try {
      await new Api(trimmed, () => {}).listCommands(1, 0);
      onSignedIn(trimmed);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'This API key was refused: check it and try again.' : messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return html`<main class="sign-in">
    <h1>ffmpeg-operator</h1>
    <form onSubmit=${submit}>
      <label for="api-key">API key</label>
      <input
        id="api-key"
        name="api-key"
        type="password"
        autocomplete="off"
        spellcheck="false"
        value=${key}
        onInput=${(e: Event) => setKey((e.target as HTMLInputElement).value)}
      />
      <button type="submit" disabled=${busy}>Sign in</button>
      <${ErrorMessage} error=${error} />
      <p class="hint">${withCode(KEY_HINT)}</p>
    </form>
  </main>`;
}
