// The event loop every operator stand-in shares (TEST DOUBLE support): watch one kind, and run the
// stand-in's reconcile for each object, one at a time per object, again for changes that arrived
// meanwhile. A failed pass (a conflict, a timeout, a dropped connection) is run again after a
// growing pause, as the real operators' controller-runtime queues requeue errors with backoff.
import { type ReadonlyDeep } from '../../src/kit/controller/informer.ts';
import { copyOf } from '../../src/kit/controller/informer.ts';
import { Informer } from '../../src/kit/controller/informer.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import type { ResourceType } from '../../src/kit/kube/resources.ts';
import { silentLogger } from '../../src/kit/logger.ts';
import { keyOf } from '../../src/kit/controller/result.ts';

/** Any object as an operator writes it. */
export type Loose = KubeObjectLike & { metadata: KubeObjectLike['metadata'] & Record<string, unknown>; [field: string]: unknown };

export abstract class StandIn<T extends KubeObjectLike> {
  protected readonly client: KubeClient;
  protected readonly informer: Informer<T>;
  private readonly busy = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(client: KubeClient, type: ResourceType) {
    this.client = client;
    this.informer = new Informer<T>(client, type, { log: silentLogger });
    // Each pass works on its own copy: a reconcile may change the object it is given.
    const handle = (obj: ReadonlyDeep<T>): void => void this.run(copyOf<T>(obj));
    this.informer.on({ added: handle, updated: (_old, obj) => handle(obj), deleted: (obj) => void this.gone(copyOf<T>(obj)) });
  }

  /** What the real operator does for one object. */
  protected abstract reconcile(obj: T): Promise<void>;

  /** What goes with an object once it is gone from the API (e.g. the S3 server playing its pods). Must not reject. */
  protected async gone(_obj: T): Promise<void> {}

  async start(): Promise<void> {
    await this.informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
    await this.informer.stop();
  }

  /** Re-runs for every object, e.g. after a stand-in option changed. */
  resync(): Promise<void[]> {
    return Promise.all(this.informer.list().map((o) => this.run(copyOf<T>(o))));
  }

  /** Never rejects: a failed pass is retried, as a controller's queue would. */
  private async run(obj: T): Promise<void> {
    const key = keyOf(obj.metadata);
    if (this.stopped) return;
    if (this.busy.has(key)) {
      this.dirty.add(key);
      return;
    }
    this.busy.add(key);
    clearTimeout(this.retries.get(key));
    this.retries.delete(key);
    let failed = false;
    try {
      await this.reconcile(obj);
      this.failures.delete(key);
    } catch (err) {
      // Why a stand-in retries, when a test that waits on it times out.
      if (process.env.DEBUG_STANDIN) console.error('stand-in pass failed', key, err);
      failed = true;
    } finally {
      this.busy.delete(key);
    }
    const latest = this.informer.get(key);
    if (!latest) {
      this.failures.delete(key);
    } else if (this.dirty.delete(key)) {
      await this.run(copyOf<T>(latest));
    } else if (failed) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      const timer = setTimeout(
        () => {
          this.retries.delete(key);
          const current = this.informer.get(key);
          if (current) void this.run(copyOf<T>(current));
        },
        Math.min(50 * 2 ** n, 2_000),
      );
      this.retries.set(key, timer);
    }
  }
}
