// When a failed webhook delivery is tried again: after each failed attempt, the next delay of the
// schedule; past its end the delivery is FAILED. The default adds up to about a day (27 h 35 min).
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [
  5_000, // 5 s
  5 * 60_000, // 5 min
  30 * 60_000, // 30 min
  2 * 3600_000, // 2 h
  5 * 3600_000, // 5 h
  10 * 3600_000, // 10 h
  10 * 3600_000, // 10 h
];

/** Delay before the next attempt after `failedAttempts` failures, or null when the delivery gives up. */
export function nextRetryDelayMs(failedAttempts: number, schedule: readonly number[] = DEFAULT_RETRY_DELAYS_MS): number | null {
  if (failedAttempts < 1) throw new Error('a retry follows at least one failed attempt');
  return failedAttempts <= schedule.length ? schedule[failedAttempts - 1] : null;
}

/** Attempts in all: the first and one per delay. */
export const maxAttempts = (schedule: readonly number[] = DEFAULT_RETRY_DELAYS_MS) => schedule.length + 1;
