// Where runner pods report their events in cluster mode (not part of the public API, not in the
// OpenAPI document). Each request carries the token of its one Job.
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import * as v from 'valibot';
import { JOB_NAME_PATTERN } from '../../core/jobs/job-name.ts';
import type { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { jobTokenValid } from '../../core/jobs/job-token.ts';
import { jsonBody } from '../validation.ts';

const eventSchema = v.object({
  jobName: v.pipe(v.string(), v.regex(JOB_NAME_PATTERN)),
  event: v.looseObject({ type: v.picklist(['stage', 'progress', 'result']) }),
});

export function jobEventRoutes(events: JobEventsRepo, tokenSecret: string): Hono {
  const app = new Hono();
  // Events are small; nothing is read before the size is known to be sane.
  app.use(
    '/internal/*',
    bodyLimit({ maxSize: 256 * 1024, onError: (c) => c.json({ detail: 'event too large' }, 413, { connection: 'close' }) }),
  );
  app.post('/internal/v1/job-events', async (c) => {
    const token = (c.req.header('authorization') ?? '').replace(/^Bearer\s+/i, '');
    if (!/^[0-9a-f]{64}$/.test(token)) return c.json({ detail: 'invalid job token' }, 401);
    const body = await jsonBody(c, eventSchema);
    if (!jobTokenValid(tokenSecret, body.jobName, token)) return c.json({ detail: 'invalid job token' }, 401);
    // Progress too: the operator stores it for polls (a runner sends at most about two a second).
    await events.append(body.jobName, body.event as never);
    return c.json({});
  });
  return app;
}
