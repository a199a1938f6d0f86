// The one "poll until" of the tests, the e2e specs and the hack/ scripts: it tries check until it returns a value, pausing between tries with a
// growing delay, and gives up after a timeout with what it waited for, the last error check threw,
// and whatever explain adds.

export interface EventuallyOptions {
  /** Gives up after this long: 30 s unless set. */
  timeoutMs?: number;
  /** The first pause between tries (50 ms unless set); each next one doubles, up to maxDelayMs. */
  delayMs?: number;
  /** The longest pause between tries: 500 ms (or delayMs, when longer) unless set. */
  maxDelayMs?: number;
  /** What else a timeout says, e.g. the conditions and events of the objects waited on. */
  explain?: () => Promise<string> | string;
}

/**
 * Polls until check returns a value (anything but undefined or false), and returns it. A check that
 * throws is tried again; after the timeout (a number is the timeout) it rejects naming `what`.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  options: number | EventuallyOptions = {},
): Promise<T> {
  const {
    timeoutMs = 30_000,
    delayMs = 50,
    maxDelayMs = Math.max(delayMs, 500),
    explain,
  } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let delay = delayMs; ; delay = Math.min(delay * 2, maxDelayMs)) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const last = lastError ? ` (last error: ${(lastError as Error).message})` : '';
      const more = explain
        ? `\n${await Promise.resolve()
            .then(explain)
            .catch((err: Error) => `(explain failed: ${err.message})`)}`
        : '';
      throw new Error(`timed out after ${duration(timeoutMs)} waiting for ${what}${last}${more}`);
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}

const duration = (ms: number): string => (ms < 1_000 ? `${Math.round(ms)} ms` : `${Number((ms / 1_000).toFixed(1))} s`);
