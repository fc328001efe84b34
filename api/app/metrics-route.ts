// HTTP side of the metrics: the latency of every request by route pattern, and GET /metrics (embedded
// mode; the cluster-mode API serves its metrics on a port of its own, core/metrics/metrics-server.ts).
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { Metrics } from '../../core/metrics/metrics.ts';
import { METRICS_UNAUTHORIZED, metricsAccess } from '../../core/metrics/metrics-access.ts';
import { responseStatus } from './node-response.ts';

/**
 * The route pattern a request matched (`/v1/commands/:command_id`), never its raw path, so a client
 * cannot create a series per URL; "unmatched" when only middleware matched (unknown paths, 405s).
 * Middleware is registered with method ALL; a handler by its method.
 */
export function routeLabel(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) if (routes[i].method !== 'ALL') return routes[i].path;
  return 'unmatched';
}

/** Records each request's latency (to its response's headers; a streamed body may take longer). */
export function httpLatency(metrics: Metrics): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now();
    await next();
    metrics.httpRequest(c.req.method, routeLabel(c), responseStatus(c), (performance.now() - start) / 1000);
  };
}

/** GET /metrics in Prometheus' text format; with a token set, only for `Authorization: Bearer <token>`. */
export function metricsRoute(metrics: Metrics, token: string | null): Hono {
  const mayRead = metricsAccess(token);
  const app = new Hono();
  app.get('/metrics', async (c) => {
    if (!mayRead(c.req.header('authorization'))) return c.body(METRICS_UNAUTHORIZED.body, 401, METRICS_UNAUTHORIZED.headers);
    return c.body(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType });
  });
  return app;
}
