// The HTTP app factory: everything it needs is passed in, so tests build it without a socket.
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Logger } from 'pino';
import type { AccountsRepo } from '../core/accounts/accounts-repo.ts';
import type { CommandsRepo } from '../core/commands/commands-repo.ts';
import type { FilesRepo } from '../core/files/files-repo.ts';
import { Quotas } from '../core/accounts/quotas.ts';
import { fileRoutes } from './routes/files.ts';
import { rateLimit } from './rate-limit.ts';
import { authFailureLimit, DEFAULT_AUTH_FAILURE_LIMIT } from './auth-failure-limit.ts';
import type { Storage } from '../core/storage/storage.ts';
import { requireApiKey, type AppEnv } from './auth.ts';
import { commandRoutes, type CommandRoutesDeps } from './routes/commands.ts';
import { docsRoutes } from './routes/docs.ts';
import { RequestInvalid } from './validation.ts';

export interface AppDeps {
  accounts: AccountsRepo;
  commands: CommandsRepo;
  /** The poll path's read of a command with its outputs, scoped by account (a PollCache's `find`). */
  readCommand: CommandRoutesDeps['readCommand'];
  files: FilesRepo;
  storage: Storage;
  dispatch: (commandId: string) => void;
  kickFileTasks: () => void;
  /** Validity of upload part URLs (seconds, at most 7 days). */
  uploadTtlSeconds: number;
  logger: Logger;
  clock?: () => Date;
  /** Serves stored files (local storage backend only). */
  storageRoutes?: Hono<any>;
  /** Cluster mode: where runner pods report their events. */
  jobEventRoutes?: Hono<any>;
  /** Readiness: resolves when the database answers. */
  ready?: () => Promise<boolean>;
  maxBodyBytes?: number;
  /** Failed API key attempts allowed per client address in a window, then 429. */
  authFailures?: { maxFailures: number; windowSeconds: number };
  /** Reverse proxies whose X-Forwarded-For names the client (FFOP_TRUSTED_PROXIES). */
  trustedProxies?: readonly string[];
}

function routePattern(path: string): RegExp {
  const source = path
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

export function createApp(d: AppDeps): Hono {
  const clock = d.clock ?? (() => new Date());
  const app = new Hono();

  app.onError((err, c) => {
    if (err instanceof RequestInvalid) return c.json({ detail: err.detail }, 422);
    d.logger.error({ err, path: c.req.path, method: c.req.method }, 'request failed');
    return c.json({ detail: 'Internal Server Error' }, 500);
  });
  // As FastAPI: a known path with another method is 405 with Allow, an unknown path 404.
  let routes: { method: string; pattern: RegExp }[] | null = null;
  app.notFound((c) => {
    routes ??= app.routes
      .filter((r) => r.method !== 'ALL')
      .map((r) => ({ method: r.method, pattern: routePattern(r.path) }));
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(c.req.path)).map((r) => r.method))];
    if (allowed.length > 0) return c.json({ detail: 'Method Not Allowed' }, 405, { allow: allowed.join(', ') });
    return c.json({ detail: 'Not Found' }, 404);
  });

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const ok = d.ready ? await d.ready().catch(() => false) : true;
    return c.json({ status: ok ? 'ready' : 'not ready' }, ok ? 200 : 503);
  });

  const api = new Hono<AppEnv>();
  const limitBody = bodyLimit({
    maxSize: d.maxBodyBytes ?? 1024 * 1024,
    // The unread rest of the body makes the connection unusable: tell the client not to reuse it.
    onError: (c) => c.json({ detail: `Request body too large (limit ${d.maxBodyBytes ?? 1024 * 1024} bytes)` }, 413, { connection: 'close' }),
  });
  // GET and HEAD bodies are never read. Looking for one would make @hono/node-server build a whole
  // fetch Request (and an AbortController) for every poll.
  api.use('/v1/*', (c, next) => (c.req.method === 'GET' || c.req.method === 'HEAD' ? next() : limitBody(c, next)));
  // Counted per client address before any key is looked up: guessing keys is throttled, not just failed.
  api.use('/v1/*', authFailureLimit({ ...(d.authFailures ?? DEFAULT_AUTH_FAILURE_LIMIT), trustedProxies: d.trustedProxies, clock: () => clock().getTime() }));
  api.use('/v1/*', requireApiKey(d.accounts));
  api.use('/v1/*', rateLimit(() => clock().getTime()));
  const quotas = new Quotas(d.files, clock);
  api.route('/', commandRoutes({ commands: d.commands, readCommand: d.readCommand, quotas, storage: d.storage, dispatch: d.dispatch, clock }));
  api.route(
    '/',
    fileRoutes({ files: d.files, storage: d.storage, quotas, kickFileTasks: d.kickFileTasks, uploadTtlSeconds: d.uploadTtlSeconds }),
  );

  app.route('/', docsRoutes(api));
  if (d.storageRoutes) app.route('/', d.storageRoutes);
  if (d.jobEventRoutes) app.route('/', d.jobEventRoutes);
  app.route('/', api);
  return app;
}
