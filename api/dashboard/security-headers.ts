// Headers of every dashboard response. The page holds an API key (in sessionStorage), so it runs no
// inline or eval'd script, loads code from its own origin only, cannot be framed, and takes media only
// from its own origin and from where the storage serves files (another origin with S3 storage, or a
// public URL that differs from the address the browser used).
import type { Storage } from '../../core/storage/storage.ts';
import { IMPORT_MAP_HASH } from './page.ts';

export function dashboardCsp(storageOrigins: readonly string[]): string {
  const media = ["'self'", ...storageOrigins].join(' ');
  return [
    "default-src 'self'",
    `script-src 'self' ${IMPORT_MAP_HASH}`,
    "style-src 'self'",
    `img-src ${media}`,
    `media-src ${media}`,
    // Direct uploads PUT their parts to the storage's part URLs.
    `connect-src ${media}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    // No string ever becomes HTML or script: assigning one to innerHTML (or eval) throws.
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; ');
}

/**
 * The policy of /docs (Swagger UI, on the dashboard's origin, where a dashboard tab may hold an API key):
 * the same rules, loosened only where Swagger UI needs it: its styles set inline style attributes, its
 * stylesheet draws icons from data: URLs, and it renders Markdown as HTML (so no Trusted Types). Its
 * scripts are files of our own origin, like the dashboard's; "Try it out" calls the API on this origin.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function dashboardHeaders(csp: string): Record<string, string> {
  return {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
  };
}

/**
 * The origins of the URLs this storage hands out: public files, and presigned downloads and part
 * uploads (signed by the same endpoint). Asked of the storage itself, so the policy follows its settings.
 */
export async function storageOrigins(storage: Storage): Promise<string[]> {
  const urls = [storage.publicUrl('public/dashboard/origin'), await storage.presignGet('private/dashboard/origin', 60)];
  return [...new Set(urls.map((url) => new URL(url).origin))];
}
