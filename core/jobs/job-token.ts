// The token a runner pod presents when it reports events: an HMAC of its Job's name, so it is valid
// for that one Job only and the runner holds no long-lived credential.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function jobToken(secret: string, jobName: string): string {
  return createHmac('sha256', secret).update(`job-events\n${jobName}`).digest('hex');
}

export function jobTokenValid(secret: string, jobName: string, token: string): boolean {
  const expected = Buffer.from(jobToken(secret, jobName), 'hex');
  const given = Buffer.from(token, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
