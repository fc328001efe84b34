// The web dashboard at /dashboard: a page and its files, served without an API key. The page signs in
// with an API key and reads everything through the /v1 API, from the browser.
import { Hono, type Context } from 'hono';
import type { Storage } from '../../core/storage/storage.ts';
import { DashboardAssets, type Asset } from './assets.ts';
import { DASHBOARD_PAGE } from './page.ts';
import { dashboardCsp, dashboardHeaders, storageOrigins } from './security-headers.ts';

export function dashboardRoutes(storage: Storage): Hono {
  const app = new Hono();
  const assets = new DashboardAssets();
  let headers: Promise<Record<string, string>> | null = null;
  const securityHeaders = () => {
    headers ??= storageOrigins(storage).then(
      (origins) => dashboardHeaders(dashboardCsp(origins)),
      (err: unknown) => {
        headers = null; // asked again at the next request
        throw err;
      },
    );
    return headers;
  };

  // Also matches /dashboard itself, and the 404s of unknown files under it.
  app.use('/dashboard/*', async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(await securityHeaders())) c.header(name, value);
  });

  const page = (c: Context) => c.html(DASHBOARD_PAGE, 200, { 'cache-control': 'no-cache' });
  app.get('/dashboard', page);
  app.get('/dashboard/', page);
  app.get('/dashboard/dashboard.css', async (c) => serve(c, await assets.stylesheet()));
  app.get('/dashboard/ui/:name', async (c) => serve(c, await assets.uiModule(c.req.param('name'))));
  app.get('/dashboard/vendor/:name', async (c) => serve(c, await assets.vendorModule(c.req.param('name'))));
  return app;
}

function serve(c: Context, asset: Asset | null): Response {
  if (!asset) return c.json({ detail: 'Not Found' }, 404);
  // Revalidated on every load (a new version of the service may change them), answered 304 when unchanged.
  const headers = { 'content-type': asset.contentType, etag: asset.etag, 'cache-control': 'no-cache' };
  if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, headers);
  return c.body(asset.body, 200, headers);
}
