// Cluster mode's metrics port (FFOP_METRICS_HOST:FFOP_METRICS_PORT): a small node:http server with
// GET /metrics and GET /healthz, apart from the API's public port (an Ingress routes every path of that
// one). The operator has no other HTTP server; the cluster-mode API serves its own metrics here too.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import { METRICS_UNAUTHORIZED, metricsAccess } from './metrics-access.ts';

/** Default ports: both run on one machine outside a cluster, so they differ. */
export const OPERATOR_METRICS_PORT = 9464;
export const CLUSTER_API_METRICS_PORT = 9465;

/**
 * Where a cluster-mode process serves its metrics (FFOP_METRICS_*), or null when FFOP_METRICS_PORT=off.
 * Reachable from other machines, they need a token: without FFOP_METRICS_TOKEN only a loopback host
 * may serve them (the Helm chart always sets one).
 */
export function metricsServerSettings(
  config: Pick<Config, 'metricsHost' | 'metricsPort' | 'metricsToken'>,
  defaultPort: number,
): Pick<MetricsServerOptions, 'host' | 'port' | 'token'> | null {
  if (config.metricsPort === 'off') return null;
  if (!config.metricsToken && !isLoopbackHost(config.metricsHost)) {
    throw new Error(
      `FFOP_METRICS_TOKEN must be set when FFOP_METRICS_HOST (${config.metricsHost}) is not a loopback address ` +
        '(or FFOP_METRICS_PORT=off): /metrics would be open to the network',
    );
  }
  return { host: config.metricsHost, port: config.metricsPort ?? defaultPort, token: config.metricsToken };
}

/** 127.0.0.0/8, ::1 and localhost: reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  registry: Registry;
  host: string;
  port: number;
  /** FFOP_METRICS_TOKEN: when set, /metrics needs `Authorization: Bearer <token>`. */
  token: string | null;
  logger: Logger;
}

export async function startMetricsServer(o: MetricsServerOptions): Promise<MetricsServer> {
  const mayRead = metricsAccess(o.token);
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const known = path === '/metrics' || path === '/healthz';
    if (!known) return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Not Found' }));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return void res
        .writeHead(405, { 'content-type': 'application/json', allow: 'GET, HEAD' })
        .end(JSON.stringify({ detail: 'Method Not Allowed' }));
    }
    if (path === '/healthz') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    if (!mayRead(req.headers.authorization)) return void res.writeHead(401, METRICS_UNAUTHORIZED.headers).end(METRICS_UNAUTHORIZED.body);
    const text = await o.registry.metrics();
    res.writeHead(200, { 'content-type': o.registry.contentType }).end(req.method === 'HEAD' ? undefined : text);
  };
  const server = createServer((req, res) => {
    answer(req, res).catch((err: unknown) => {
      o.logger.error({ err }, 'metrics collection failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: 'metrics collection failed' }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  o.logger.info({ url: `http://${host}:${port}/metrics` }, 'metrics server listening');
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
