// Throttles API key guessing without handing out an outage. Keys that fail (401) are counted per client
// address and, against a botnet of addresses, across all addresses: past `maxFailures` in a window
// from one address, or `globalMaxFailures` in a window from all of them, further attempts get 429 with
// Retry-After before their key is even looked up (so a flood of bad keys costs no database work).
// A key that authenticated recently in this process is exempt: it is recognised by its digest at
// constant cost and goes on to the normal lookup, so a valid client keeps working from an address
// that an attacker floods (the default 127.0.0.1 listener, or a proxy without FFOP_TRUSTED_PROXIES).
// A key never seen by this process cannot prove itself without a lookup: it waits like a guess.
// In memory, per API process.
// The address is the socket's peer. X-Forwarded-For counts only when that peer is one of the
// configured trusted proxies (FFOP_TRUSTED_PROXIES): then the client is the last address in it that is
// not itself a trusted proxy (anyone can send the header, so only what our proxies appended counts).
import { hash } from 'node:crypto';
import { isIP } from 'node:net';
import type { Context } from 'hono';
import { ExpiringMap } from './expiring-map.ts';

export interface AuthFailureLimitOptions {
  /** Failed attempts allowed per address in one window. */
  maxFailures: number;
  windowSeconds: number;
  /** Failed attempts allowed from all addresses together in one window. */
  globalMaxFailures: number;
  /** Addresses remembered at most (memory bound under a flood from many addresses). */
  maxTracked?: number;
  /** Reverse proxies whose X-Forwarded-For is believed (exact addresses). */
  trustedProxies?: readonly string[];
}

export const DEFAULT_AUTH_FAILURE_LIMIT = { maxFailures: 30, windowSeconds: 60, globalMaxFailures: 1_000 };

/** How long a key that authenticated stays exempt from the limits (renewed by its use). */
export const KNOWN_KEY_TTL_MS = 24 * 3600_000;
const MAX_KNOWN_KEYS = 100_000;

interface Window {
  failures: number;
}

/**
 * The failed-key counts. The API's gate (v1-gate.ts) asks whether a key is known, else for a refusal
 * before it looks the key up, and reports each key it refused and each it accepted.
 */
export class AuthFailureLimit {
  private readonly opts: AuthFailureLimitOptions;
  private readonly windows: ExpiringMap<Window>;
  /** Digests of keys that authenticated, with when they were last recorded. */
  private readonly knownKeys = new ExpiringMap<number>(KNOWN_KEY_TTL_MS, MAX_KNOWN_KEYS);
  private global = { failures: 0, endsAt: 0 };
  /** Lookups under way per client, and in all: they count until they end, so concurrent guesses cannot overshoot. */
  private readonly pending = new Map<string, number>();
  private pendingTotal = 0;
  private readonly trusted: ReadonlySet<string>;

  constructor(opts: AuthFailureLimitOptions) {
    this.opts = opts;
    this.windows = new ExpiringMap(opts.windowSeconds * 1000, opts.maxTracked ?? 100_000);
    this.trusted = new Set((opts.trustedProxies ?? []).map((a) => clientKey(a)));
  }

  /** Who sends this request, as counted: the address (or /64) behind our trusted proxies. */
  clientOf(c: Context): string {
    return clientKey(clientAddress(c, this.trusted));
  }

  /** The key authenticated in this process within KNOWN_KEY_TTL_MS (and has not failed since). */
  isKnownKey(key: string, now: number): boolean {
    return this.knownKeys.get(digest(key), now) !== undefined;
  }

  /** 429 with Retry-After while the client's or everyone's failures are used up in this window; null lets it through. */
  refusal(c: Context, client: string, now: number): Response | null {
    const window = this.windows.entry(client, now);
    if ((window?.value.failures ?? 0) + (this.pending.get(client) ?? 0) >= this.opts.maxFailures) {
      const where = `from your address (${this.opts.maxFailures} in ${this.opts.windowSeconds} s)`;
      return tooMany(c, window ? window.expiresAt - now : 0, where);
    }
    const globalLive = this.global.endsAt > now;
    if ((globalLive ? this.global.failures : 0) + this.pendingTotal >= this.opts.globalMaxFailures) {
      const where = `on this service from all addresses (${this.opts.globalMaxFailures} in ${this.opts.windowSeconds} s)`;
      return tooMany(c, globalLive ? this.global.endsAt - now : 0, where);
    }
    return null;
  }

  /** A key of this client is being looked up (it passed refusal()); lookupEnded() must follow. */
  lookupStarted(client: string): void {
    this.pending.set(client, (this.pending.get(client) ?? 0) + 1);
    this.pendingTotal += 1;
  }

  lookupEnded(client: string): void {
    const n = this.pending.get(client) ?? 1;
    if (n <= 1) this.pending.delete(client);
    else this.pending.set(client, n - 1);
    this.pendingTotal -= 1;
  }

  /** The client's key was refused (401). */
  failed(client: string, now: number): void {
    const window = this.windows.get(client, now);
    if (window === undefined) this.windows.set(client, { failures: 1 }, now);
    else window.failures += 1;
    if (this.global.endsAt <= now) this.global = { failures: 0, endsAt: now + this.opts.windowSeconds * 1000 };
    this.global.failures += 1;
  }

  /** A known key was refused (revoked): it waits like any other from now on. */
  forgetKey(key: string): void {
    this.knownKeys.delete(digest(key));
  }

  /** The key authenticated: exempt from the limits for KNOWN_KEY_TTL_MS, renewed at most every half of it. */
  succeeded(key: string, now: number): void {
    const id = digest(key);
    const recordedAt = this.knownKeys.get(id, now);
    if (recordedAt === undefined || now - recordedAt > KNOWN_KEY_TTL_MS / 2) this.knownKeys.set(id, now, now);
  }
}

function tooMany(c: Context, remainingMs: number, where: string): Response {
  const retryAfter = Math.max(1, Math.ceil(remainingMs / 1000));
  return c.json({ detail: `Too many failed API key attempts ${where}; retry after ${retryAfter} s` }, 429, {
    'retry-after': String(retryAfter),
  });
}

/** Keys are held by their SHA-256, never as plaintext (as in the key cache). */
function digest(key: string): string {
  return hash('sha256', key, 'base64');
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
