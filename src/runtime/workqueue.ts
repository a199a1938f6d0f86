// A keyed work queue with client-go semantics: a key is queued at most once, is never handed to two
// workers at once (a key re-added while in flight is queued again when its worker is done), can be
// delayed, and backs off exponentially per key on failure.

export interface Backoff {
  baseMs: number;
  maxMs: number;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;

  private readonly backoff: Backoff;

  constructor(backoff: Backoff = { baseMs: 1000, maxMs: 60_000 }) {
    this.backoff = backoff;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter(key);
    else this.queue.push(key);
  }

  /** Adds the key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** Re-adds after this key's next backoff step: base * 2^failures, capped. */
  addRateLimited(key: string): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.addAfter(key, Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** failures));
  }

  /** Clears the key's failure history (after a success). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Waits for the next key; undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    const take = (k: string): string => {
      this.dirty.delete(k);
      this.processing.add(k);
      return k;
    };
    if (key !== undefined) return Promise.resolve(take(key));
    return new Promise((resolve) => this.waiters.push((k) => resolve(k === undefined ? undefined : take(k))));
  }

  /** Marks a key's processing finished; a key added meanwhile is queued now. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) {
      const waiter = this.waiters.shift();
      if (waiter) waiter(key);
      else this.queue.push(key);
    }
  }

  get length(): number {
    return this.queue.length;
  }

  shutdown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const waiter of this.waiters) waiter(undefined);
    this.waiters = [];
  }
}

/** A token bucket: the global cap on reconciles per second, shared by all workers of a controller. */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();
  private readonly qps: number;
  private readonly burst: number;

  constructor(qps: number, burst: number) {
    this.qps = qps;
    this.burst = burst;
    this.tokens = burst;
  }

  /** How long to wait before the next token; takes it. */
  reserve(): number {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }
}
