// One HTTP request through the SSRF guard (guarded-connection.ts), opened the same way for the input
// downloader (GET) and the webhook sender (POST): an IP-literal host is refused before anything is
// opened, the connection is the guard's own (no Agent, no pooled socket, no proxy), and the request
// resolves once the answer's head has arrived.
import http from 'node:http';
import https from 'node:https';
import type { AddressPolicy } from './address-policy.ts';
import { connectChecked, hostOf, literalRefusal, portOf, type GuardErrors } from './guarded-connection.ts';

export interface GuardedRequestOptions {
  method: 'GET' | 'POST';
  url: URL;
  headers: http.OutgoingHttpHeaders;
  body?: string;
  /** null = a URL the service minted itself: no address checks. */
  policy: AddressPolicy | null;
  /** Longest wait for the connection. */
  connectTimeoutMs: number;
  /** Longest silence once connected: the request (and its answer) then fail with errors.unreachable. None when absent. */
  idleTimeoutMs?: number;
  signal: AbortSignal;
  /** How messages name the request, e.g. "GET https://host/path". */
  label: string;
  errors: GuardErrors;
}

export interface GuardedResponse {
  request: http.ClientRequest;
  response: http.IncomingMessage;
}

export function guardedRequest(o: GuardedRequestOptions): Promise<GuardedResponse> {
  const { url, policy, signal, label, errors } = o;
  const host = hostOf(url);
  const port = portOf(url);
  const refusal = literalRefusal(policy, host, port);
  if (refusal) return Promise.reject(errors.refused(refusal));
  return new Promise((resolve, reject) => {
    let response: http.IncomingMessage | undefined;
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request({
      method: o.method,
      host,
      port,
      path: `${url.pathname}${url.search}`,
      headers: { ...o.headers, 'user-agent': 'ffmpeg-operator' },
      signal,
      createConnection: (_options, done) => {
        connectChecked({ url, host, port, policy, idleMs: o.connectTimeoutMs, signal, label, errors }, done);
        return undefined;
      },
    });
    const idleMs = o.idleTimeoutMs;
    if (idleMs !== undefined) {
      request.setTimeout(idleMs, () => {
        const error = errors.unreachable(`${label} timed out: no data for ${idleMs} ms`);
        // Destroying the response first makes a body pipeline fail with this error, not 'aborted'.
        response?.destroy(error);
        request.destroy(error);
      });
    }
    request.on('response', (incoming) => {
      response = incoming;
      resolve({ request, response: incoming });
    });
    request.on('error', reject); // `on`, not `once`: a later socket error must not go unhandled
    request.end(o.body);
  });
}
