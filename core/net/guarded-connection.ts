// Outgoing connections that reach only the addresses an AddressPolicy allows (the SSRF guard), shared
// by the input downloader and the webhook sender.
//
// Address checks happen at three points, because each one alone has a gap:
// - IP-literal hosts are checked before connecting (Node skips `lookup` for them): `literalRefusal`;
// - host names go through a `lookup` that refuses the name if ANY resolved address is refused;
// - the connected socket's actual remote address is checked before a single byte is written.
// Callers pass `connectChecked` as the HTTP client's `createConnection` (no Agent), so no pooled socket
// is reused and no proxy settings apply.
import { lookup as dnsLookup } from 'node:dns';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { AddressPolicy } from './address-policy.ts';

/** How the caller words its failures (the downloader's DownloadError, the webhook sender's own). */
export interface GuardErrors {
  /** The address is not public and not allowed; `reason` names host and address. */
  refused(reason: string): Error;
  unreachable(message: string): Error;
}

export interface GuardedTarget {
  url: URL;
  /** The URL's host without IPv6 brackets. */
  host: string;
  port: number;
  /** null = a URL the service minted itself: no address checks. */
  policy: AddressPolicy | null;
  /** Longest wait for the connection. */
  idleMs: number;
  signal: AbortSignal;
  /** How messages name the request, e.g. "GET https://host/path". */
  label: string;
  errors: GuardErrors;
}

export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

export function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** The reason an IP-literal host is refused before connecting; null for names and allowed addresses. */
export function literalRefusal(policy: AddressPolicy | null, host: string, port: number): string | null {
  if (!policy || net.isIP(host) === 0 || policy.isAllowed(host, port, host)) return null;
  return `${host} is not a public address`;
}

/**
 * Opens the TCP connection, checks the peer's real address, and only then hands the socket (wrapped
 * in TLS for https) to the HTTP client, so nothing is sent to a refused peer.
 */
export function connectChecked(to: GuardedTarget, done: (error: Error | null, socket: Duplex) => void): void {
  const { url, host, port, policy, idleMs, signal, label, errors } = to;
  const socket = net.connect({ host, port, ...(policy ? { lookup: checkedLookup(policy, host, port, errors) } : {}) });
  let settled = false;
  const fail = (error: Error) => {
    if (settled) return;
    settled = true;
    signal.removeEventListener('abort', onAbort);
    socket.destroy();
    done(error, socket);
  };
  const onAbort = () => fail(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  const onIdle = () => fail(errors.unreachable(`${label} timed out: no connection after ${idleMs} ms`));
  socket.on('error', fail); // stays: after hand-over it is a no-op beside the HTTP client's own listener
  socket.setTimeout(idleMs, onIdle);
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) return onAbort();
  socket.once('connect', () => {
    const remote = socket.remoteAddress ?? '';
    if (policy && !policy.isAllowed(remote, socket.remotePort ?? port, host)) {
      return fail(errors.refused(`${host} connected to ${remote}, which is not a public address`));
    }
    settled = true;
    signal.removeEventListener('abort', onAbort);
    socket.setTimeout(0);
    socket.off('timeout', onIdle);
    if (url.protocol !== 'https:') return done(null, socket);
    const secure = tls.connect({
      socket,
      host, // certificate identity is checked against this (names and IP literals alike)
      ...(net.isIP(host) === 0 ? { servername: host } : {}),
      ALPNProtocols: ['http/1.1'],
    });
    secure.on('error', () => {}); // the HTTP client attaches its own listener on the next tick
    done(null, secure);
  });
}

/** A `lookup` that refuses a host name when any of its addresses is refused by the policy. */
function checkedLookup(policy: AddressPolicy, host: string, port: number, errors: GuardErrors): net.LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0, hints: options.hints }, (error, addresses) => {
      if (error) return callback(error, '');
      const refused = addresses.find((entry) => !policy.isAllowed(entry.address, port, host));
      if (refused) {
        return callback(errors.refused(`${host} resolves to ${refused.address}, which is not a public address`), '');
      }
      if (addresses.length === 0) return callback(errors.unreachable(`${host} has no addresses`), '');
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
