// A controller: a few workers draining a keyed queue into one Reconciler, under a global rate limit.
import type { Probe } from '../health.ts';
import type { Logger } from '../logger.ts';
import { observeQueue, reconcileErrors, reconcileTime, reconcileTotal, workqueueRetries } from '../metrics.ts';
import type { Reconciler } from './result.ts';
import { sleep, type Backoff } from '../backoff.ts';
import { TokenBucket, WorkQueue } from './workqueue.ts';

export interface ControllerOptions {
  /** Concurrent reconciles (never two for one key). */
  workers?: number;
  /** Per-key backoff after errors and requeue(). */
  backoff?: Backoff;
  /** Global cap on reconciles per second, with a burst of ten times that. */
  maxReconcileRate?: number;
  /** Upper bound for one reconcile; its AbortSignal fires then. */
  timeoutMs?: number;
  /** How long past its deadline a reconcile may still run before the controller counts as stuck. */
  stuckGraceMs?: number;
}

// controller-runtime's values of controller_runtime_reconcile_total{result}, so dashboards work.
const RESULT_LABEL = { done: 'success', requeue: 'requeue', requeueAfter: 'requeue_after' } as const;

export class Controller implements Probe {
  readonly queue: WorkQueue;
  private readonly bucket: TokenBucket;
  private readonly workers: Promise<void>[] = [];
  private readonly opts: Required<ControllerOptions>;
  readonly name: string;
  private readonly reconciler: Reconciler;
  private readonly log: Logger;
  private unobserve?: () => void;
  /** When each running reconcile began, by key. */
  private readonly running = new Map<string, number>();

  constructor(name: string, reconciler: Reconciler, log: Logger, opts: ControllerOptions = {}) {
    this.name = name;
    this.reconciler = reconciler;
    this.log = log;
    this.opts = {
      workers: 4,
      backoff: { baseMs: 1000, maxMs: 60_000 },
      maxReconcileRate: 10,
      timeoutMs: 90_000,
      stuckGraceMs: 30_000,
      ...opts,
    };
    this.queue = new WorkQueue(this.opts.backoff);
    this.bucket = new TokenBucket(this.opts.maxReconcileRate, this.opts.maxReconcileRate * 10);
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    this.unobserve ??= observeQueue(this.name, this.queue);
    for (let i = 0; i < this.opts.workers; i++) this.workers.push(this.work());
  }

  /** Stops taking keys and waits for in-flight reconciles to end. */
  async stop(): Promise<void> {
    this.queue.shutdown();
    await Promise.all(this.workers);
    this.unobserve?.();
    this.unobserve = undefined;
  }

  /** A reconcile still running well past its deadline ignores its AbortSignal: a worker is lost. */
  stuck(now: number): string | undefined {
    for (const [key, since] of this.running) {
      if (now - since > this.opts.timeoutMs + this.opts.stuckGraceMs) {
        return `controller ${this.name}: the reconcile of ${key} has run ${Math.round((now - since) / 1000)} s, past its ${this.opts.timeoutMs / 1000} s deadline`;
      }
    }
    return undefined;
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const wait = this.bucket.reserve();
      if (wait > 0) await sleep(wait);
      await this.reconcileOne(key);
      this.queue.done(key);
    }
  }

  private async reconcileOne(key: string): Promise<void> {
    const stopTimer = reconcileTime.startTimer({ controller: this.name });
    // Not AbortSignal.timeout: its timer (and all that hangs on the signal) would outlive the reconcile.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException('reconcile deadline exceeded', 'TimeoutError')), this.opts.timeoutMs);
    const signal = deadline.signal;
    this.running.set(key, performance.now()); // the monotonic clock, as Health's
    try {
      const result = await this.reconciler.reconcile(key, signal);
      reconcileTotal.inc({ controller: this.name, result: RESULT_LABEL[result.kind] });
      this.log.debug('reconciled', { controller: this.name, key, result: RESULT_LABEL[result.kind] });
      if (result.kind === 'requeue') {
        workqueueRetries.inc({ name: this.name });
        this.queue.addRateLimited(key);
      } else {
        this.queue.forget(key);
        if (result.kind === 'requeueAfter') this.queue.addAfter(key, result.ms);
      }
    } catch (err) {
      reconcileTotal.inc({ controller: this.name, result: 'error' });
      reconcileErrors.inc({ controller: this.name });
      workqueueRetries.inc({ name: this.name });
      this.log.warn('reconcile failed; retrying with backoff', { controller: this.name, key, error: errorMessage(err) });
      this.queue.addRateLimited(key);
    } finally {
      this.running.delete(key);
      clearTimeout(timer);
      stopTimer();
    }
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
