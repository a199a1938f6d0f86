// An informer (kube-rs watcher + reflector): list, then watch from the list's resourceVersion,
// keeping a cache and telling handlers what changed. It never gives up: watch ends are resumed,
// 410 Gone relists (and reports objects that vanished meanwhile), errors back off up to 30 s.
import type { KubeClient, KubeObjectLike } from './kube/client.ts';
import { isGone } from './kube/errors.ts';
import type { ResourceType } from './kube/resources.ts';
import type { Logger } from './logger.ts';
import { keyOf } from './result.ts';

export interface Handlers<T> {
  added?(obj: T): void;
  updated?(oldObj: T, obj: T): void;
  deleted?(obj: T): void;
}

export class Informer<T extends KubeObjectLike> {
  private readonly store = new Map<string, T>();
  private readonly handlers: Handlers<T>[] = [];
  private readonly abort = new AbortController();
  private loop?: Promise<void>;
  private synced!: Promise<void>;
  private markSynced!: () => void;

  readonly client: KubeClient;
  readonly type: ResourceType;
  private readonly opts: { namespace?: string; labelSelector?: string; log: Logger };

  constructor(client: KubeClient, type: ResourceType, opts: { namespace?: string; labelSelector?: string; log: Logger }) {
    this.client = client;
    this.type = type;
    this.opts = opts;
    this.synced = new Promise((resolve) => (this.markSynced = resolve));
  }

  on(handlers: Handlers<T>): this {
    this.handlers.push(handlers);
    return this;
  }

  /** Starts the list/watch loop; resolves once the cache holds a first full list. */
  start(): Promise<void> {
    this.loop ??= this.run();
    return this.synced;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let resourceVersion: string | undefined;
    let delay = 1000;
    while (!signal.aborted) {
      try {
        if (resourceVersion === undefined) {
          const listed = await this.client.list<T>(this.type, { namespace: this.opts.namespace, labelSelector: this.opts.labelSelector, signal });
          this.replace(listed.items);
          resourceVersion = listed.resourceVersion;
          this.markSynced();
        }
        delay = 1000;
        await this.client.watch(this.type, { namespace: this.opts.namespace, labelSelector: this.opts.labelSelector, resourceVersion, signal }, (type, obj) => {
          resourceVersion = obj.metadata.resourceVersion ?? resourceVersion;
          if (type === 'ADDED' || type === 'MODIFIED') this.upsert(obj as T);
          else if (type === 'DELETED') this.remove(obj as T);
        });
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          resourceVersion = undefined; // too old: relist
          continue;
        }
        this.opts.log.debug('list/watch failed; retrying', { resource: this.type.plural, error: (err as Error).message, retryInMs: delay });
        await sleep(delay, signal);
        delay = Math.min(delay * 2, 30_000);
      }
    }
  }

  private replace(items: T[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      seen.add(keyOf(item.metadata));
      this.upsert(item);
    }
    for (const [key, obj] of this.store) if (!seen.has(key)) this.remove(obj);
  }

  private upsert(obj: T): void {
    const key = keyOf(obj.metadata);
    const old = this.store.get(key);
    if (old?.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    this.store.set(key, obj);
    for (const h of this.handlers) {
      if (old) h.updated?.(old, obj);
      else h.added?.(obj);
    }
  }

  private remove(obj: T): void {
    const key = keyOf(obj.metadata);
    const old = this.store.get(key);
    if (!old) return;
    this.store.delete(key);
    for (const h of this.handlers) h.deleted?.(old);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
