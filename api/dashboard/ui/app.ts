// The dashboard: sign in, then the pages, each reading the /v1 API with the key. Every value put into an
// htm template becomes a text node or a property, escaped by preact: API data never becomes markup.
import { useMemo, useState } from 'preact/hooks';
import { Api, forgetKey, saveKey, savedKey } from './api.ts';
import { CommandPage } from './command-page.ts';
import { CommandsPage } from './commands-page.ts';
import { FilesPage } from './files-page.ts';
import { html } from 'htm/preact';
import { useRoute, type Route } from './router.ts';
import { SignIn } from './sign-in.ts';
import { SubmitPage } from './submit-page.ts';
import { WebhookPage } from './webhook-page.ts';

const NAV: { page: Route['page']; hash: string; label: string }[] = [
  { page: 'commands', hash: '#/commands', label: 'Commands' },
  { page: 'new', hash: '#/new', label: 'New command' },
  { page: 'files', hash: '#/files', label: 'Files' },
  { page: 'webhook', hash: '#/webhook', label: 'Webhook' },
];

export function App() {
  const [key, setKey] = useState(savedKey());
  const [notice, setNotice] = useState<string | null>(null);
  const route = useRoute();
  const signOut = (message: string | null) => {
    forgetKey();
    setKey(null);
    setNotice(message);
  };
  const api = useMemo(() => (key ? new Api(key, () => signOut('The API key was refused: sign in again.')) : null), [key]);

  if (!api) {
    const signedIn = (k: string) => {
      saveKey(k);
      setNotice(null);
      setKey(k);
    };
    return html`<${SignIn} notice=${notice} onSignedIn=${signedIn} />`;
  }
  const current = route.page === 'command' ? 'commands' : route.page;
  return html`<header class="top">
      <strong class="brand">ffmpeg-operator</strong>
      <nav>${NAV.map((n) => html`<a href=${n.hash} class=${n.page === current ? 'active' : ''}>${n.label}</a>`)}</nav>
      <button type="button" class="link" onClick=${() => signOut(null)}>Sign out</button>
    </header>
    <main>${page(route, api)}</main>`;
}

function page(route: Route, api: Api) {
  switch (route.page) {
    case 'commands':
      return html`<${CommandsPage} api=${api} />`;
    case 'command':
      return html`<${CommandPage} key=${route.id} api=${api} id=${route.id} />`;
    case 'new':
      return html`<${SubmitPage} api=${api} input=${route.query.get('input')} />`;
    case 'files':
      return html`<${FilesPage} api=${api} />`;
    case 'webhook':
      return html`<${WebhookPage} api=${api} />`;
  }
}
