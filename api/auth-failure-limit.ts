// Throttles API key guessing per client address: after `maxFailures` answers of 401 to one address
// within a window, that address gets 429 with Retry-After until the window ends, before its key is
// even looked up (so a flood of bad keys costs no database work). In memory, per API process.
// The address is the socket's peer. X-Forwarded-For counts only when that peer is one of the
// configured trusted proxies (FFOP_TRUSTED_PROXIES): then the client is the last address in it that is
// not itself a trusted proxy (anyone can send the header, so only what our proxies appended counts).
import { isIP } from 'node:net';
import type { Context } from 'hono';

export interface AuthFailureLimitOptions {
  /** Failed attempts allowed per address in one window. */
  maxFailures: number;
  windowSeconds: number;
  /** Addresses remembered at most (memory bound under a flood from many addresses). */
  maxTracked?: number;
  /** Reverse proxies whose X-Forwarded-For is believed (exact addresses). */
  trustedProxies?: readonly string[];
}

export const DEFAULT_AUTH_FAILURE_LIMIT = { maxFailures: 30, windowSeconds: 60 };

interface Window {
  failures: number;
  endsAt: number;
}

/**
 * The failed-key count per client. The API's gate (v1-gate.ts) asks for a refusal before it looks a
 * key up, and reports each key it refused.
 */
export class AuthFailureLimit {
  private readonly opts: AuthFailureLimitOptions;
  private readonly maxTracked: number;
  private readonly windows = new Map<string, Window>();
  private readonly trusted: ReadonlySet<string>;

  constructor(opts: AuthFailureLimitOptions) {
    this.opts = opts;
    this.maxTracked = opts.maxTracked ?? 100_000;
    this.trusted = new Set((opts.trustedProxies ?? []).map((a) => clientKey(a)));
  }

  /** Who sends this request, as counted: the address (or /64) behind our trusted proxies. */
  clientOf(c: Context): string {
    return clientKey(clientAddress(c, this.trusted));
  }

  /** 429 with Retry-After while the client has used up its failures in this window; null lets it through. */
  refusal(c: Context, client: string, now: number): Response | null {
    const window = this.windows.get(client);
    if (window === undefined || window.endsAt <= now || window.failures < this.opts.maxFailures) return null;
    const retryAfter = Math.max(1, Math.ceil((window.endsAt - now) / 1000));
    return c.json(
      {
        detail:
          `Too many failed API key attempts from your address (${this.opts.maxFailures} in ${this.opts.windowSeconds} s); ` +
          `retry after ${retryAfter} s`,
      },
      429,
      { 'retry-after': String(retryAfter) },
    );
  }

  /** The client's key was refused (401). */
  failed(client: string, now: number): void {
    let window = this.windows.get(client);
    if (window === undefined || window.endsAt <= now) {
      this.windows.delete(client);
      if (this.windows.size >= this.maxTracked) forgetExpired(this.windows, now);
      // Still full: the oldest window goes (Map order is insertion order).
      if (this.windows.size >= this.maxTracked) this.windows.delete(this.windows.keys().next().value as string);
      window = { failures: 0, endsAt: now + this.opts.windowSeconds * 1000 };
      this.windows.set(client, window);
    }
    window.failures += 1;
  }
}

function forgetExpired(windows: Map<string, Window>, now: number): void {
  for (const [client, window] of windows) if (window.endsAt <= now) windows.delete(client);
}

/** The client behind our trusted proxies, or the TCP peer itself. */
function clientAddress(c: Context, trusted: ReadonlySet<string>): string | undefined {
  const peer = peerAddress(c);
  if (peer === undefined || !trusted.has(clientKey(peer))) return peer;
  const hops = (c.req.header('x-forwarded-for') ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => isIP(h) !== 0);
  for (let i = hops.length - 1; i >= 0; i--) if (!trusted.has(clientKey(hops[i]))) return hops[i];
  return peer;
}

/** The TCP peer, from @hono/node-server's bindings; undefined when the app runs without a socket. */
function peerAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

/**
 * What one client is: an IPv4 address (also when IPv4-mapped), or an IPv6 /64, since one subscriber
 * usually holds a whole /64 and counting single addresses there would limit nobody.
 */
export function clientKey(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  const text = address.split('%')[0];
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(text);
  if (mapped) return mapped[1];
  if (isIP(text) !== 6) return text;
  const groupsIn = (part: string) => (part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])));
  const [head, tail] = text.split('::');
  const groups =
    tail === undefined
      ? groupsIn(head)
      : [...groupsIn(head), ...Array<string>(8 - groupsIn(head).length - groupsIn(tail).length).fill('0'), ...groupsIn(tail)];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
