// The dashboard's one HTML page. Its modules import preact and htm (tagged templates instead of JSX, so
// no build step) by their package names; the import map sends those names to the packages' own ESM
// files, served from node_modules (no CDN, no bundler). The import map is the page's only inline
// script: the Content-Security-Policy allows it by its hash, and nothing else inline.
import { createHash } from 'node:crypto';

export const VENDOR_MODULES = {
  preact: 'preact',
  'preact-hooks': 'preact/hooks',
  htm: 'htm',
  'htm-preact': 'htm/preact',
} as const;

export type VendorName = keyof typeof VENDOR_MODULES;

const IMPORT_MAP = JSON.stringify({
  imports: Object.fromEntries(Object.entries(VENDOR_MODULES).map(([name, specifier]) => [specifier, `/dashboard/vendor/${name}.js`])),
});

/** The CSP source that lets the import map (and no other inline script) run. */
export const IMPORT_MAP_HASH = `'sha256-${createHash('sha256').update(IMPORT_MAP).digest('base64')}'`;

export const DASHBOARD_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ffmpeg-operator dashboard</title>
<link rel="stylesheet" href="/dashboard/dashboard.css">
<script type="importmap">${IMPORT_MAP}</script>
<script type="module" src="/dashboard/ui/main.js"></script>
</head>
<body>
<div id="app"><noscript>The dashboard needs JavaScript.</noscript></div>
</body>
</html>
`;
