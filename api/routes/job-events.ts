// Where runner pods report their events in cluster mode (not part of the public API, not in the
// OpenAPI document). Each request carries the token of its one Job.
import { Hono } from 'hono';
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
  app.post('/internal/v1/job-events', async (c) => {
    const token = (c.req.header('authorization') ?? '').replace(/^Bearer\s+/i, '');
    const body = await jsonBody(c, eventSchema);
    if (!token || !jobTokenValid(tokenSecret, body.jobName, token)) return c.json({ detail: 'invalid job token' }, 401);
    // Progress is frequent and nobody stores it; stages and the result are what the operator needs.
    if (body.event.type !== 'progress') await events.append(body.jobName, body.event as never);
    return c.json({});
  });
  return app;
}
