// The methods a path supports, from the app's own routes: a known path answers OPTIONS with 204 and
// Allow, and another method it does not support with 405 and Allow (RFC 9110 9.3.7 and 15.5.6).
// A literal route is a resource of its own: /v1/files/store-file is not a file id of /v1/files/:file_id,
// so GET /v1/files/store-file is 405, as the OpenAPI document says, not a 422 about the id.
import type { Context } from 'hono';

interface RouteEntry {
  method: string;
  path: string;
}

interface Resource {
  pattern: RegExp;
  /** Parameter and wildcard segments: the fewer, the more specific. */
  variables: number;
  methods: string[];
}

const isVariable = (part: string) => part.startsWith(':') || part === '*';

function routePattern(path: string): RegExp {
  const escape = (part: string) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const source = path
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : escape(part)))
    .join('/');
  return new RegExp(`^${source}$`);
}

function resourcesOf(routes: readonly RouteEntry[]): Resource[] {
  const byPath = new Map<string, Resource>();
  for (const r of routes) {
    if (r.method === 'ALL') continue; // middleware
    const resource = byPath.get(r.path) ?? {
      pattern: routePattern(r.path),
      variables: r.path.split('/').filter(isVariable).length,
      methods: [],
    };
    if (!resource.methods.includes(r.method)) resource.methods.push(r.method);
    byPath.set(r.path, resource);
  }
  return [...byPath.values()];
}

/** Paths whose Allow header is remembered: a client polls the same path many times. */
const REMEMBERED_PATHS = 4096;

/** The Allow header of a path, or null when no route matches it. HEAD comes with GET (Hono answers it). */
export function allowedMethods(routes: () => readonly RouteEntry[]): (path: string) => string | null {
  let resources: Resource[] | null = null;
  // Matching every route's pattern cost each request about 3% of the API's time under load.
  const remembered = new Map<string, string | null>();
  return (path) => {
    let allow = remembered.get(path);
    if (allow === undefined) {
      resources ??= resourcesOf(routes());
      allow = allowOf(resources, path);
      if (remembered.size >= REMEMBERED_PATHS) remembered.clear();
      remembered.set(path, allow);
    }
    return allow;
  };
}

function allowOf(resources: Resource[], path: string): string | null {
  const matching = resources.filter((r) => r.pattern.test(path));
  if (matching.length === 0) return null;
  const fewest = Math.min(...matching.map((r) => r.variables));
  const methods = new Set(matching.filter((r) => r.variables === fewest).flatMap((r) => r.methods));
  if (methods.has('GET')) methods.add('HEAD');
  methods.add('OPTIONS');
  return [...methods].join(', ');
}

/** Whether an Allow header ("GET, HEAD, OPTIONS") names the method, without splitting it per request. */
export function allowsMethod(allow: string, method: string): boolean {
  const at = allow.indexOf(method);
  return at !== -1 && (at === 0 || allow[at - 1] === ' ') && (at + method.length === allow.length || allow[at + method.length] === ',');
}

/** 204 to OPTIONS, 405 to a method the path's resource does not support; null lets the request through. */
export function answerUnroutedMethod(c: Context, allow: string | null): Response | null {
  if (allow === null) return null;
  if (c.req.method === 'OPTIONS') return c.body(null, 204, { allow });
  if (allowsMethod(allow, c.req.method)) return null;
  return c.json({ detail: 'Method Not Allowed' }, 405, { allow });
}
