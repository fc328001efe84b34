// Entry point of the dashboard page (/dashboard).
import { render } from 'preact';
import { App } from './app.ts';
import { html } from 'htm/preact';

render(html`<${App} />`, document.getElementById('app')!);
