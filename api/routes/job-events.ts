// Where runner pods report their events in cluster mode (not part of the public API, not in the
// OpenAPI document). Each request carries the token of its one Job. A token is only as good as the
// pod that holds it (a hostile command that escaped ffmpeg could post with it), so reports are
// checked like user input: 401 for a token that is not the Job's or has expired (the step's deadline
// plus a grace after its first report), 429 past the Job's request budget, 413 past the size its event
// type needs, 409 once the step ended or its result is stored, 422 for an event that is malformed or
// cannot be true of the step. A refused result fails the step with the reason.
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { CommandRow, CommandsRepo } from '../../core/commands/commands-repo.ts';
import { CommandStatus } from '../../core/commands/command-status.ts';
import { stepBounds, stepDeadlineSeconds, type RunLimits } from '../../core/engine/step-spec-builder.ts';
import { jobName, parseJobName, type JobRef } from '../../core/jobs/job-name.ts';
import type { JobEventsRepo } from '../../core/jobs/job-events-repo.ts';
import { jobTokenValid } from '../../core/jobs/job-token.ts';
import { refusedResult, resultProblem } from '../../core/jobs/result-bounds.ts';
import { parseRunnerEvent } from '../../core/jobs/runner-event-schema.ts';
import { DEFAULT_OUTPUT_MULTIPART } from '../../core/jobs/output-parts.ts';
import { DEFAULT_MAX_OUTPUT_FILE_BYTES, DEFAULT_MAX_OUTPUT_FILES, type RunnerEvent } from '../../core/jobs/step-spec.ts';
import { JobEventBudget } from '../middleware/job-event-budget.ts';
import type { Storage } from '../../core/storage/storage.ts';
import { addJobUploadRoute } from './job-uploads.ts';

/** Largest body of each event type: a result holds up to 20 outputs' media (and the ETags of those uploaded in parts), or an error message. */
export const EVENT_BODY_LIMITS = { stage: 1024, progress: 1024, result: 64 * 1024, log: 128 * 1024 } as const;
/** Nothing larger is read at all: a result a little past its limit is still read, to fail its step saying why. */
const READ_LIMIT = 2 * EVENT_BODY_LIMITS.result;
/** A token stays good this long past its step's deadline (downloads + max_command_run_seconds + uploads). */
export const TOKEN_GRACE_SECONDS = 600;

/** The limits the operator gives runners (shared settings): what a result may report. */
export type ReportLimits = Pick<
  RunLimits,
  'downloadMaxBytes' | 'downloadTimeoutSeconds' | 'uploadAllowanceSeconds' | 'maxOutputFileBytes' | 'maxOutputFiles' | 'outputMultipart'
>;

/** The settings' defaults (core/config.ts), for an API started without them. */
export const DEFAULT_REPORT_LIMITS: ReportLimits = {
  downloadMaxBytes: 4 * 1024 ** 3,
  downloadTimeoutSeconds: 900,
  uploadAllowanceSeconds: 900,
  maxOutputFileBytes: DEFAULT_MAX_OUTPUT_FILE_BYTES,
  maxOutputFiles: DEFAULT_MAX_OUTPUT_FILES,
  outputMultipart: DEFAULT_OUTPUT_MULTIPART,
};

export interface JobEventRoutesOptions {
  events: JobEventsRepo;
  commands: CommandsRepo;
  tokenSecret: string;
  limits: ReportLimits;
  budget?: JobEventBudget;
  /** Storage, for the plans of outputs uploaded in parts (job-uploads.ts; served when limits.outputMultipart is set). */
  storage?: Storage;
}

export function jobEventRoutes(o: JobEventRoutesOptions): Hono {
  const app = new Hono();
  const budget = o.budget ?? new JobEventBudget();
  // Nothing past READ_LIMIT is read (a Content-Length beyond it is refused before the body).
  app.use(
    '/internal/*',
    bodyLimit({
      maxSize: READ_LIMIT,
      onError: (c) => c.json({ detail: `event too large (limit ${READ_LIMIT} bytes)` }, 413, { connection: 'close' }),
    }),
  );
  const outputMultipart = o.limits.outputMultipart;
  if (o.storage && outputMultipart) addJobUploadRoute(app, { ...o, storage: o.storage, outputMultipart }, budget);
  app.post('/internal/v1/job-events', async (c) => {
    const token = (c.req.header('authorization') ?? '').replace(/^Bearer\s+/i, '');
    if (!/^[0-9a-f]{64}$/.test(token)) return c.json({ detail: 'invalid job token' }, 401);
    const raw = await c.req.text();
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return c.json({ detail: 'the body is not JSON' }, 422);
    }
    if (typeof body !== 'object' || body === null || Object.keys(body).some((k) => k !== 'jobName' && k !== 'event'))
      return c.json({ detail: 'the body is {"jobName": ..., "event": {...}} and nothing else' }, 422);
    const job = await jobOf(o, budget, (body as { jobName?: unknown }).jobName, token);
    if (!job.ok) return c.json({ detail: job.detail }, job.status, job.headers);
    const { ref } = job;
    const reported = (body as { event?: unknown }).event;
    const type = (reported as { type?: unknown } | null)?.type;
    const kind = typeof type === 'string' && Object.hasOwn(EVENT_BODY_LIMITS, type) ? (type as keyof typeof EVENT_BODY_LIMITS) : null;

    if (kind !== null && Buffer.byteLength(raw) > EVENT_BODY_LIMITS[kind])
      return refuse(c, o.events, ref, kind === 'result', `a ${kind} event is at most ${EVENT_BODY_LIMITS[kind]} bytes`, 413);
    const parsed = parseRunnerEvent(reported);
    let problem = parsed.ok ? null : parsed.problem;
    const event = parsed.ok ? parsed.event : null;
    if (event?.type === 'result') problem = resultProblem(event, stepBounds(job.command, ref.step, o.limits));
    if (problem !== null) return refuse(c, o.events, ref, kind === 'result', problem);
    return store(c, o.events, ref, event!);
  });
  return app;
}

export type JobCheck =
  | { ok: true; ref: JobRef; command: CommandRow }
  | { ok: false; status: 401 | 409 | 422 | 429; detail: string; headers?: Record<string, string> };

/**
 * The Job a runner's request is of, when its token is the Job's and still good, the Job's budget has
 * room, and its step still runs with no result stored; otherwise the answer that says why not.
 */
export async function jobOf(
  o: Pick<JobEventRoutesOptions, 'commands' | 'events' | 'tokenSecret' | 'limits'>,
  budget: JobEventBudget,
  name: unknown,
  token: string,
): Promise<JobCheck> {
  const ref = typeof name === 'string' ? parseJobName(name) : null;
  if (!ref) return { ok: false, status: 422, detail: 'jobName: not the name of a Job of this service' };
  if (!jobTokenValid(o.tokenSecret, ref.name, token)) return { ok: false, status: 401, detail: 'invalid job token' };
  const wait = budget.take(ref.name);
  if (wait !== null)
    return {
      ok: false,
      status: 429,
      detail: `too many reports for this Job; retry after ${wait} s`,
      headers: { 'retry-after': String(wait) },
    };
  const command = await o.commands.findById(ref.commandId);
  if (!runsStep(command, ref)) return { ok: false, status: 409, detail: 'the step of this Job has ended' };
  const state = await o.events.reportState(ref.name);
  if (state.hasResult) return { ok: false, status: 409, detail: 'the result of this Job is stored already' };
  const lifetime = stepDeadlineSeconds(command, o.limits) + TOKEN_GRACE_SECONDS;
  if (state.firstEventAgeSeconds !== null && state.firstEventAgeSeconds > lifetime)
    return { ok: false, status: 401, detail: `job token expired (${lifetime} s after the Job's first report)` };
  return { ok: true, ref, command };
}

/** 422 naming the field (413: too large); a refused result fails the step in its place, so the command says why. */
async function refuse(
  c: Context,
  events: JobEventsRepo,
  ref: JobRef,
  isResult: boolean,
  problem: string,
  status: 413 | 422 = 422,
): Promise<Response> {
  if (isResult) {
    await events.appendResult(ref.name, refusedResult(problem));
  }
  return c.json({ detail: problem }, status);
}

async function store(c: Context, events: JobEventsRepo, ref: JobRef, event: RunnerEvent): Promise<Response> {
  if (event.type !== 'result') {
    // Progress too: the operator stores it for polls (a runner sends at most one every 2 s).
    await events.append(ref.name, event);
    return c.json({});
  }
  // Two results at once: the database keeps the first.
  if (!(await events.appendResult(ref.name, event))) return c.json({ detail: 'the result of this Job is stored already' }, 409);
  return c.json({});
}

/**
 * The command runs the step and attempt this Job was made for. Kueue mode: QUEUED in the cluster's
 * queue too, since its pod may report before the operator has seen Kueue release it.
 */
export function runsStep(command: CommandRow | null, ref: JobRef): command is CommandRow {
  if (!command || jobName(command.id, command.currentStep, command.attempt) !== ref.name) return false;
  return command.status === CommandStatus.PROCESSING || (command.status === CommandStatus.QUEUED && command.inClusterQueue);
}
