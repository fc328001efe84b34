// /openapi.json and an interactive /docs page whose assets are served from node_modules, so the page
// works on a machine with no internet access.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { Hono } from 'hono';
import type { AppEnv } from '../middleware/auth.ts';
import { openAPIRouteHandler } from 'hono-openapi';
import type { OpenAPIV3_1 } from 'openapi-types';
import { errorStatusDescription } from '../openapi/components.ts';
import { MAX_JSON_DEPTH } from '../schemas/json-depth.ts';
import { STORABLE_JSON, STORABLE_JSON_NAME } from '../schemas/body.ts';
import { dashboardHeaders, DOCS_CSP } from '../dashboard/security-headers.ts';

const SWAGGER_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ffmpeg-operator API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"><link rel="icon" href="/docs/assets/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script></body></html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });`;

// Rules of every JSON body that the schemas state field by field (the size limit is the service's setting).
const BODY_RULES =
  'Every JSON body is an object sent as application/json in UTF-8, of at most FFOP_MAX_BODY_BYTES (1 MiB by default; 413 above), ' +
  `nested at most ${MAX_JSON_DEPTH} levels deep; no string or key in it holds NUL or an unpaired surrogate, and no key is ` +
  '__proto__, constructor or prototype. Unknown properties are ignored.';

export function docsRoutes(api: Hono<AppEnv>): Hono {
  const app = new Hono();
  app.get(
    '/openapi.json',
    openAPIRouteHandler(api, {
      documentation: {
        openapi: '3.1.0',
        info: {
          title: 'ffmpeg-operator',
          version: '1.0.0',
          description:
            `Run FFmpeg commands as a service. Authenticate with the X-API-KEY header.\n\n${BODY_RULES}\n\n` +
            `Command error statuses (error_status):\n${errorStatusDescription}`,
        },
        components: {
          securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' } },
          // A plain object of the schemas (which do not depend on OpenAPI types).
          schemas: { [STORABLE_JSON_NAME]: STORABLE_JSON as OpenAPIV3_1.SchemaObject },
        },
        security: [{ apiKey: [] }],
      },
    }),
  );
  // The dashboard's frame and content rules (security-headers.ts), with a policy that Swagger UI works under.
  const headers = Object.entries(dashboardHeaders(DOCS_CSP));
  app.use('/docs/*', async (c, next) => {
    await next(); // '/docs/*' matches /docs itself too
    for (const [name, value] of headers) c.header(name, value);
  });
  app.get('/docs', (c) => c.html(PAGE));
  app.get('/docs/init.js', (c) => c.body(INIT, 200, { 'content-type': 'text/javascript; charset=utf-8' }));
  app.get('/docs/assets/:name', async (c) => {
    const name = c.req.param('name');
    const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!type) return c.json({ detail: 'Not Found' }, 404);
    const path = join(SWAGGER_DIR, name);
    const { size } = await stat(path);
    const body = Readable.toWeb(createReadStream(path)) as ReadableStream;
    return c.body(body, 200, { 'content-type': type, 'content-length': String(size), 'cache-control': 'public, max-age=86400' });
  });
  return app;
}
