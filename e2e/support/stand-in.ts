// The event loop every operator stand-in shares (TEST DOUBLE support): watch one kind, and run the
// stand-in's reconcile for each object, one at a time per object, again for changes that arrived
// meanwhile. Conflicts (a stale read) are retried on the next event, as a controller would.
import { Informer } from '../../src/runtime/informer.ts';
import type { KubeClient, KubeObjectLike } from '../../src/runtime/kube/client.ts';
import { isConflict } from '../../src/runtime/kube/errors.ts';
import type { ResourceType } from '../../src/runtime/kube/resources.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { keyOf } from '../../src/runtime/result.ts';

/** Any object as an operator writes it. */
export type Loose = KubeObjectLike & { metadata: KubeObjectLike['metadata'] & Record<string, unknown>; [field: string]: unknown };

export abstract class StandIn<T extends KubeObjectLike> {
  protected readonly client: KubeClient;
  protected readonly informer: Informer<T>;
  private readonly busy = new Set<string>();
  private readonly dirty = new Set<string>();

  constructor(client: KubeClient, type: ResourceType) {
    this.client = client;
    this.informer = new Informer<T>(client, type, { log: silentLogger });
    const handle = (obj: T): void => void this.run(obj).catch(() => undefined);
    this.informer.on({ added: handle, updated: (_old, obj) => handle(obj) });
  }

  /** What the real operator does for one object. */
  protected abstract reconcile(obj: T): Promise<void>;

  async start(): Promise<void> {
    await this.informer.start();
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }

  /** Re-runs for every object, e.g. after a stand-in option changed. */
  resync(): Promise<void[]> {
    return Promise.all(this.informer.list().map((o) => this.run(o).catch(() => undefined)));
  }

  private async run(obj: T): Promise<void> {
    const key = keyOf(obj.metadata);
    if (this.busy.has(key)) {
      this.dirty.add(key);
      return;
    }
    this.busy.add(key);
    try {
      await this.reconcile(obj);
    } catch (err) {
      if (!isConflict(err)) throw err;
    } finally {
      this.busy.delete(key);
      const latest = this.informer.get(key);
      if (this.dirty.delete(key) && latest) await this.run(latest);
    }
  }
}
