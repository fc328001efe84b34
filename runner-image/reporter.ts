// Cluster mode: the runner POSTs each event to the API with its Job's token, in order. Progress
// events are best effort (while one waits to be sent, a newer one takes its place rather than queueing
// behind it) and go out at most every progressIntervalMs: each is a row the operator reads, and the
// FfmpegCommand shows progress no more often anyway. Stages and the result are retried, and a result
// that cannot be delivered makes the runner exit non-zero so the Job fails visibly.
import type { RunnerEvent } from '../core/jobs/step-spec.ts';

export interface Reporter {
  send(event: RunnerEvent): void;
  /** Resolves when everything sent so far was delivered; false when the result was not. */
  flush(): Promise<boolean>;
}

export interface RetryTiming {
  /** How long stages and the result are retried: an API rollout (helm upgrade) may leave no replica for a while. */
  retryForMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
  /** Least time between two progress POSTs; default 2 s (the operator mirrors progress every 2 s). */
  progressIntervalMs?: number;
}
const RETRY: RetryTiming = { retryForMs: 180_000, firstDelayMs: 500, maxDelayMs: 5_000 };
const PROGRESS_INTERVAL_MS = 2_000;

export function httpReporter(url: string, jobName: string, token: string, retry: RetryTiming = RETRY): Reporter {
  let chain: Promise<boolean> = Promise.resolve(true);
  let resultDelivered = true;
  /** The newest progress event, while a send of progress is queued (or timed) and has not started. */
  let waitingProgress: RunnerEvent | null = null;
  let progressTimer: NodeJS.Timeout | null = null;
  let lastProgressPost = -Infinity;
  const progressIntervalMs = retry.progressIntervalMs ?? PROGRESS_INTERVAL_MS;
  /** Queues the send of the newest progress event behind what is queued now. */
  const queueProgress = () => {
    progressTimer = null;
    chain = chain.then(() => {
      const newest = waitingProgress;
      waitingProgress = null;
      if (!newest) return true;
      lastProgressPost = performance.now();
      return post(newest);
    });
  };
  const post = async (event: RunnerEvent): Promise<boolean> => {
    const deadline = Date.now() + (event.type === 'progress' ? 0 : retry.retryForMs);
    for (let delay = retry.firstDelayMs; ; delay = Math.min(delay * 2, retry.maxDelayMs)) {
      let wait = delay;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ jobName, event }),
          signal: AbortSignal.timeout(10_000),
        });
        await res.body?.cancel();
        if (res.ok) return true;
        // Over the Job's request budget: the API says when to come back.
        if (res.status === 429) wait = Math.max(delay, Number(res.headers.get('retry-after')) * 1000 || 0);
        else if (res.status < 500) return false; // refused: retrying will not help
      } catch {
        /* network error: retry */
      }
      if (Date.now() + wait > deadline) return false;
      await new Promise((r) => setTimeout(r, wait));
    }
  };
  const sendHeldProgress = () => {
    if (!progressTimer) return;
    clearTimeout(progressTimer);
    queueProgress();
  };
  return {
    send(event) {
      if (event.type === 'progress') {
        const queued = waitingProgress !== null;
        waitingProgress = event;
        if (queued) return;
        const wait = lastProgressPost + progressIntervalMs - performance.now();
        if (wait <= 0) queueProgress();
        else progressTimer = setTimeout(queueProgress, wait);
        return;
      }
      // Progress held for its interval goes first: events stay in order, and none follows the result.
      sendHeldProgress();
      chain = chain.then(async () => {
        const ok = await post(event);
        if (event.type === 'result') resultDelivered = ok;
        return ok;
      });
    },
    async flush() {
      sendHeldProgress();
      await chain;
      return resultDelivered;
    },
  };
}
