// Waiting, in one place: an exponential backoff (base * 2^failures, capped) and a sleep that a
// signal cuts short. Queues, informers, leader election and the HTTP client all wait this way.

export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/** The wait after `failures` failures in a row (0: the base). */
export function backoffDelay(backoff: Backoff, failures: number): number {
  return Math.min(backoff.maxMs, backoff.baseMs * 2 ** failures);
}

/** Waits `ms`, or less if the signal aborts first; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
