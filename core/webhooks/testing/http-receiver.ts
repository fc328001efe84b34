// Test kit: an HTTP server on 127.0.0.1 that records every request (once its body has arrived) and
// lets the test answer it; closed when the test ends.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface ReceivedRequest {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface HttpReceiver {
  port: number;
  /** http://127.0.0.1:<port>, without a path. */
  url: string;
  /** The address policy entry that allows it. */
  allow: string;
  requests: ReceivedRequest[];
  /** Connections opened so far. */
  connections: () => number;
}

/** `answer` gets each request with its 1-based number; leaving `res` alone never answers. */
export async function httpReceiver(
  t: TestContext,
  answer: (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void,
): Promise<HttpReceiver> {
  const requests: ReceivedRequest[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      requests.push({ url: req.url ?? '', headers: req.headers, body });
      answer(req, res, requests.length);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { port, url: `http://127.0.0.1:${port}`, allow: `127.0.0.1:${port}`, requests, connections: () => connections };
}
