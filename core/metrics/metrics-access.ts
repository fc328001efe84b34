// Who may read /metrics: everyone when no token is set (FFOP_METRICS_TOKEN unset), otherwise a request
// with `Authorization: Bearer <token>`. Compared as SHA-256 digests in constant time, so neither the
// token's bytes nor its length leak through timing.
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** A check of the Authorization header of a /metrics request; true when it may read. */
export function metricsAccess(token: string | null): (authorization: string | undefined) => boolean {
  if (!token) return () => true;
  const expected = digest(token);
  return (authorization) => {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    return match !== null && timingSafeEqual(digest(match[1]), expected);
  };
}

/** The 401's body and header (the same in the API and the operator's metrics server). */
export const METRICS_UNAUTHORIZED = {
  body: JSON.stringify({ detail: 'Invalid authorization: /metrics needs Authorization: Bearer <FFOP_METRICS_TOKEN>' }),
  headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="metrics"' },
};
