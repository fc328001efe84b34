// Cluster mode: a large output's multipart upload plan, asked of the API with the Job's token
// (api/routes/job-uploads.ts; why a request rather than a plan in the spec: core/jobs/output-parts.ts).
import { setTimeout as wait } from 'node:timers/promises';
import type { OutputUploadPlan } from '../core/jobs/output-parts.ts';
import type { PlanUpload } from './outputs.ts';

/** Waits between tries of a plan request the API could not answer (a rollout, a 5xx, over the Job's budget). */
const PLAN_RETRY_DELAYS_MS = [500, 2_000, 5_000];
/** Longest wait a 429's retry-after is followed for. */
const MAX_RETRY_AFTER_MS = 10_000;

/** The job-uploads URL next to the job-events URL the runner reports to. */
export function uploadPlansUrl(reportUrl: string): string {
  return new URL('job-uploads', reportUrl).toString();
}

export function httpUploadPlans(url: string, jobName: string, token: string, retryDelaysMs = PLAN_RETRY_DELAYS_MS): PlanUpload {
  return async (request, signal) => {
    for (let attempt = 0; ; attempt++) {
      let problem: string;
      let delay = retryDelaysMs[attempt];
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ jobName, ...request }),
          signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]),
        });
        const text = await res.text();
        if (res.ok) return planOf(JSON.parse(text));
        problem = `the API answered HTTP ${res.status} to the upload plan request: ${text.slice(0, 300)}`;
        if (res.status === 429 && delay !== undefined) {
          delay = Math.min(MAX_RETRY_AFTER_MS, Math.max(delay, Number(res.headers.get('retry-after')) * 1000 || 0));
        } else if (res.status < 500) throw new Error(problem); // refused: another try will not change it
      } catch (err) {
        if (signal.aborted || (err as Error).message.startsWith('the API answered')) throw err;
        problem = `the upload plan request failed: ${(err as Error).message}`;
      }
      if (delay === undefined) throw new Error(problem);
      await wait(delay, undefined, { signal });
    }
  };
}

/** The answer, checked for its shape (putParts checks that its URLs fit the file). */
function planOf(body: unknown): OutputUploadPlan {
  const { uploadId, partBytes, partUrls } = (body ?? {}) as Partial<OutputUploadPlan>;
  if (
    typeof uploadId !== 'string' ||
    !Number.isSafeInteger(partBytes) ||
    (partBytes as number) < 1 ||
    !Array.isArray(partUrls) ||
    !partUrls.every((u) => typeof u === 'string' && /^https?:\/\//.test(u))
  ) {
    throw new Error('the API answered the upload plan request with something that is not a plan');
  }
  return { uploadId, partBytes: partBytes as number, partUrls };
}
