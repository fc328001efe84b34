// Where a runner pod asks for the plan of a large output's multipart upload (cluster mode; not part of
// the public API): an upload started in storage and one presigned URL per part, each binding its
// part's exact size (core/jobs/output-parts.ts says why a request and not a plan in the step spec).
// Checked like the runner's reports (job-events.ts: the Job's token, its budget, its step running):
// only an output of the Job's step, only as large as the step may write. What a hostile pod could do
// with it is start uploads of its own outputs' keys, a few per second, and each is aborted when the
// step ends unless its result completes it (core/engine/output-uploads.ts).
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { stepDeadlineSeconds, outputKey, stepOutputs } from '../../core/engine/step-spec-builder.ts';
import { planOutputUpload } from '../../core/engine/output-uploads.ts';
import { MAX_MULTIPART_OUTPUT_BYTES, type OutputMultipartSettings } from '../../core/jobs/output-parts.ts';
import { DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_OUTPUT_FILES } from '../../core/jobs/step-spec.ts';
import { normalizeContentType } from '../../core/storage/content-types.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { JobEventBudget } from '../middleware/job-event-budget.ts';
import { jobOf, runsStep, type JobEventRoutesOptions } from './job-events.ts';

/** A plan request is a job name, an alias, a size and a content type. */
const BODY_LIMIT = 2048;
/** Part URLs outlive the step's deadline by this much, as the step spec's URLs do. */
const URL_GRACE_SECONDS = 600;

export interface JobUploadOptions {
  storage: Storage;
  outputMultipart: OutputMultipartSettings;
}

/** The route alone (embedded mode, whose runners report on stdout): a plan request's body is read up to BODY_LIMIT only. */
export function jobUploadRoutes(o: JobEventRoutesOptions & JobUploadOptions): Hono {
  const app = new Hono();
  app.use(
    '/internal/*',
    bodyLimit({ maxSize: BODY_LIMIT, onError: (c) => c.json({ detail: `a plan request is at most ${BODY_LIMIT} bytes` }, 413) }),
  );
  addJobUploadRoute(app, o, o.budget ?? new JobEventBudget());
  return app;
}

export function addJobUploadRoute(app: Hono, o: JobEventRoutesOptions & JobUploadOptions, budget: JobEventBudget): void {
  app.post('/internal/v1/job-uploads', async (c) => {
    const token = (c.req.header('authorization') ?? '').replace(/^Bearer\s+/i, '');
    if (!/^[0-9a-f]{64}$/.test(token)) return c.json({ detail: 'invalid job token' }, 401);
    const raw = await c.req.text();
    if (Buffer.byteLength(raw) > BODY_LIMIT) return c.json({ detail: `a plan request is at most ${BODY_LIMIT} bytes` }, 413);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return c.json({ detail: 'the body is not JSON' }, 422);
    }
    const fields = ['jobName', 'alias', 'size', 'contentType'];
    if (typeof body !== 'object' || body === null || Array.isArray(body) || Object.keys(body).some((k) => !fields.includes(k)))
      return c.json({ detail: 'the body is {"jobName", "alias", "size", "contentType"} and nothing else' }, 422);
    const job = await jobOf(o, budget, body.jobName, token);
    if (!job.ok) return c.json({ detail: job.detail }, job.status, job.headers);
    const { command, ref } = job;

    const declared = stepOutputs(command, ref.step).find((d) => d.alias === body.alias);
    if (!declared) return c.json({ detail: 'alias: not an output of this step' }, 422);
    const fileBytes = o.limits.maxOutputFileBytes ?? DEFAULT_MAX_OUTPUT_FILE_BYTES;
    const files = declared.kind === 'file' ? 1 : (o.limits.maxOutputFiles ?? DEFAULT_MAX_OUTPUT_FILES);
    const maxSize = Math.min(MAX_MULTIPART_OUTPUT_BYTES, fileBytes * files);
    const size = body.size;
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1 || size > maxSize)
      return c.json({ detail: `size: an integer of 1 to ${maxSize} bytes` }, 422);
    const contentType = normalizeContentType(typeof body.contentType === 'string' ? body.contentType : null);
    if (contentType === null) return c.json({ detail: 'contentType: not a content type' }, 422);

    const key = outputKey(command, declared);
    const plan = await planOutputUpload(o.storage, key, {
      size,
      contentType,
      minPartBytes: o.outputMultipart.minPartBytes,
      ttlSeconds: stepDeadlineSeconds(command, o.limits) + URL_GRACE_SECONDS,
    });
    // The step may have ended while the upload was made, and its uploads been aborted already.
    if (!runsStep(await o.commands.findById(ref.commandId), ref)) {
      await o.storage.abortMultipartUpload(key, plan.uploadId);
      return c.json({ detail: 'the step of this Job has ended' }, 409);
    }
    return c.json(plan);
  });
}
