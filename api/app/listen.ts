// Starts the HTTP server and resolves once it listens (or rejects, e.g. the port is taken).
import { serve, type ServerType } from '@hono/node-server';

export function listen(fetch: Parameters<typeof serve>[0]['fetch'], hostname: string, port: number): Promise<ServerType> {
  return new Promise((res, rej) => {
    const server = serve({ fetch, hostname, port }, () => res(server));
    server.once('error', rej);
  });
}
