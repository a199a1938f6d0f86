// A keyed work queue with client-go semantics: a key is queued at most once, is never handed to two
// workers at once (a key re-added while in flight is queued again when its worker is done), can be
// delayed, and backs off exponentially per key on failure.
// Two priorities, as controller-runtime's priority queue has: keys added because something changed
// go ahead of keys whose timer fired (polls, backoff), so a new or drifted object is not stuck behind
// a backlog of routine re-checks when the controller runs at its rate limit.
import { backoffDelay, type Backoff } from '../backoff.ts';

export type { Backoff };

export type Priority = 'changed' | 'timer';

export class WorkQueue {
  // Sets keep insertion order: a FIFO with O(1) removal (for promotion).
  private readonly queued: Record<Priority, Set<string>> = { changed: new Set(), timer: new Set() };
  /** Keys waiting to be processed (queued, or re-added while in flight), with their priority. */
  private readonly dirty = new Map<string, Priority>();
  /** Keys handed to a worker and not yet done, with when they were handed out (ms). */
  private readonly processing = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;

  private readonly backoff: Backoff;

  constructor(backoff: Backoff = { baseMs: 1000, maxMs: 60_000 }) {
    this.backoff = backoff;
  }

  add(key: string, priority: Priority = 'changed'): void {
    if (this.shuttingDown) return;
    const pending = this.dirty.get(key);
    if (pending) {
      if (pending === 'timer' && priority === 'changed') this.promote(key);
      return;
    }
    this.dirty.set(key, priority);
    if (!this.processing.has(key)) this.hand(key, priority);
  }

  /** Adds the key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key, 'timer');
      return;
    }
    const at = performance.now() + ms;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key, 'timer');
    }, ms);
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** Re-adds after this key's next backoff step: base * 2^failures, capped. */
  addRateLimited(key: string): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.addAfter(key, backoffDelay(this.backoff, failures));
  }

  /** Clears the key's failure history (after a success). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Waits for the next key, changed ones first; undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const take = (k: string): string => {
      this.dirty.delete(k);
      this.processing.set(k, performance.now());
      return k;
    };
    for (const fifo of [this.queued.changed, this.queued.timer]) {
      const [key] = fifo;
      if (key !== undefined) {
        fifo.delete(key);
        return Promise.resolve(take(key));
      }
    }
    return new Promise((resolve) => this.waiters.push((k) => resolve(k === undefined ? undefined : take(k))));
  }

  /** Marks a key's processing finished; a key added meanwhile is queued now. */
  done(key: string): void {
    this.processing.delete(key);
    const priority = this.dirty.get(key);
    if (priority && !this.shuttingDown) this.hand(key, priority);
  }

  /** Seconds spent so far on keys still being processed, summed (client-go's unfinished work). */
  unfinishedWorkSeconds(now = performance.now()): number {
    let total = 0;
    for (const since of this.processing.values()) total += now - since;
    return total / 1000;
  }

  /** Seconds the longest-running key has been in process: a stuck reconcile shows here. */
  longestRunningSeconds(now = performance.now()): number {
    let oldest = now;
    for (const since of this.processing.values()) oldest = Math.min(oldest, since);
    return (now - oldest) / 1000;
  }

  get length(): number {
    return this.queued.changed.size + this.queued.timer.size;
  }

  shutdown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const waiter of this.waiters) waiter(undefined);
    this.waiters = [];
  }

  /** To a waiting worker if there is one, else to the back of its priority's line. */
  private hand(key: string, priority: Priority): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(key);
    else this.queued[priority].add(key);
  }

  private promote(key: string): void {
    this.dirty.set(key, 'changed');
    if (this.queued.timer.delete(key)) this.queued.changed.add(key);
  }
}

/** A token bucket: the global cap on reconciles per second, shared by all workers of a controller. */
export class TokenBucket {
  private tokens: number;
  // The monotonic clock: a step of the wall clock (NTP, a VM resumed) must not make every worker wait it out.
  private last = performance.now();
  private readonly qps: number;
  private readonly burst: number;

  constructor(qps: number, burst: number) {
    this.qps = qps;
    this.burst = burst;
    this.tokens = burst;
  }

  /** How long to wait before the next token; takes it. */
  reserve(): number {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }
}
