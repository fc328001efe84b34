// Cluster mode: the runner POSTs each event to the API with its Job's token, in order. Progress
// events are best effort; stages and the result are retried, and a result that cannot be delivered
// makes the runner exit non-zero so the Job fails visibly.
import type { RunnerEvent } from '../core/jobs/step-spec.ts';

export interface Reporter {
  send(event: RunnerEvent): void;
  /** Resolves when everything sent so far was delivered; false when the result was not. */
  flush(): Promise<boolean>;
}

export function httpReporter(url: string, jobName: string, token: string): Reporter {
  let chain: Promise<boolean> = Promise.resolve(true);
  let resultDelivered = true;
  const post = async (event: RunnerEvent): Promise<boolean> => {
    const attempts = event.type === 'progress' ? 1 : 5;
    for (let i = 0; i < attempts; i++) {
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ jobName, event }),
          signal: AbortSignal.timeout(10_000),
        });
        await res.body?.cancel();
        if (res.ok) return true;
        if (res.status < 500) return false; // refused: retrying will not help
      } catch {
        /* network error: retry */
      }
      await new Promise((r) => setTimeout(r, 500 * 2 ** i));
    }
    return false;
  };
  return {
    send(event) {
      chain = chain.then(async () => {
        const ok = await post(event);
        if (event.type === 'result') resultDelivered = ok;
        return ok;
      });
    },
    async flush() {
      await chain;
      return resultDelivered;
    },
  };
}
