// The watch caches of one target cluster, shared by everything that reads it: observe, readiness,
// the operator's presence, the leak sweeper. A read is served from a synced cache when one holds
// the object, so a resource at rest costs no request; a miss (not ours, not labelled, not watched,
// or not seen yet) asks the server. Custom kinds are watched only once their CRD is Established, so a
// target without an operator costs one quiet watch instead of a 404 every few seconds.
import { formatObjectKey, type ObjectKey } from '../../kit/kube/object-key.ts';
import { Informer } from '../../kit/controller/informer.ts';
import type { KubeClient, KubeObjectLike, Selection } from '../../kit/kube/client.ts';
import { established, type CustomResourceDefinition } from '../../kit/kube/crds.ts';
import { CustomResourceDefinitions, groupOf, type ResourceType } from '../../kit/kube/resources.ts';
import type { Logger } from '../../kit/logger.ts';
import { onChange } from '../../kit/controller/handlers.ts';

export interface Watched extends Selection {
  namespace?: string;
  /**
   * Cache only metadata and these top-level fields. get() serves the type from this cache too, so
   * trim a type only where every reader of it needs no more (e.g. an operator's StatefulSets, read for status).
   */
  keep?: string[];
  /**
   * What the cache holds of each object (the informer's transform). get() never serves a type from
   * such a cache, nor cached() a list: it holds something other than the object.
   */
  transform?: (obj: KubeObjectLike) => KubeObjectLike;
}

export interface HealthListener {
  recovered?(): void;
  failed?(): void;
}

/** Kinds every API server serves; anything else may come and go with its CRD. */
const BUILT_IN =
  /^$|^(apps|batch|policy|autoscaling|networking\.k8s\.io|rbac\.authorization\.k8s\.io|storage\.k8s\.io|coordination\.k8s\.io|apiextensions\.k8s\.io|admissionregistration\.k8s\.io|events\.k8s\.io)$/;

export class TargetInformers {
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly informers = new Map<string, Informer<KubeObjectLike>>();
  private readonly listeners: HealthListener[] = [];
  private readonly selections = new Map<string, Watched>();
  /** Whether listeners were told the target failed since every watch last worked. */
  private down = false;
  /** Who waits for each CRD to be Established. */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(client: KubeClient, log: Logger) {
    this.client = client;
    this.log = log;
  }

  /** Told when the target's first watch fails, and when its last failing one works again. */
  onHealth(listener: HealthListener): void {
    this.listeners.push(listener);
  }

  /** Watches failing now that had worked (synced) before: one that never worked (forbidden, say) says nothing of an outage. */
  private failingCount(): number {
    return [...this.informers.values()].filter((i) => i.failing && i.hasSynced).length;
  }

  /** The shared informer of this type and selection; started (or waiting for its CRD) on first use. */
  informer<T extends KubeObjectLike>(type: ResourceType, watched: Watched = {}): Informer<T> {
    const key = `${type.apiVersion}/${type.plural}?ns=${watched.namespace ?? ''}&l=${watched.labelSelector ?? ''}&f=${watched.fieldSelector ?? ''}&k=${watched.keep ?? ''}&t=${watched.transform?.name ?? ''}`;
    let informer = this.informers.get(key);
    if (!informer) {
      const custom = !BUILT_IN.test(groupOf(type));
      informer = new Informer<KubeObjectLike>(this.client, type, {
        labelSelector: watched.labelSelector,
        fieldSelector: watched.fieldSelector,
        namespaces: watched.namespace ? [watched.namespace] : undefined,
        keep: watched.keep,
        transform: watched.transform,
        log: this.log,
        // Back from an outage: whatever waits in a retry backoff for this target is retried now.
        onRecovered: () => {
          if (this.failingCount() > 0) return;
          this.down = false;
          for (const l of this.listeners) l.recovered?.();
        },
        // Gone: its resources report Unreachable now rather than at their next poll. Told once, by the
        // first watch that worked and fails; not by a count of those failing (a watch that never
        // worked counts too, and would hide the outage).
        onFailed: () => {
          if (this.down) return;
          this.down = true;
          for (const l of this.listeners) l.failed?.();
        },
        whenServed: custom ? (signal) => this.served(`${type.plural}.${groupOf(type)}`, signal) : undefined,
      });
      this.informers.set(key, informer);
      this.selections.set(key, watched);
      void informer.start();
    }
    return informer as unknown as Informer<T>;
  }

  /** The CRD of this name, from a watch of it alone. */
  crd(name: string): Informer<CustomResourceDefinition> {
    return this.informer<CustomResourceDefinition>(CustomResourceDefinitions, { fieldSelector: `metadata.name=${name}` });
  }

  /** Resolves once the CRD is Established (at once if it is). One handler per CRD, however often it is awaited. */
  private served(name: string, signal: AbortSignal): Promise<void> {
    const crds = this.crd(name);
    if (crds.hasSynced && established(crds.get(name))) return Promise.resolve();
    let waiters = this.waiting.get(name);
    if (!waiters) {
      const set = new Set<() => void>();
      const check = (): void => {
        if (!established(crds.get(name))) return;
        for (const wake of set) wake();
        set.clear();
      };
      onChange(crds, check, { on: ['added', 'updated'] });
      this.waiting.set(name, (waiters = set));
    }
    const queue = waiters;
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        queue.delete(wake);
        resolve();
      };
      queue.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  /** What the synced cache of exactly this selection (type and label selector, nothing else) holds; undefined without one. */
  cached<T extends KubeObjectLike>(type: ResourceType, labelSelector: string): T[] | undefined {
    for (const [selection, informer] of this.informers) {
      if (informer.type.apiVersion !== type.apiVersion || informer.type.plural !== type.plural || !informer.hasSynced) continue;
      const { namespace, fieldSelector, keep, transform } = this.selections.get(selection)!;
      if (this.selections.get(selection)!.labelSelector === labelSelector && !namespace && !fieldSelector && !keep && !transform)
        return informer.list() as unknown as T[];
    }
    return undefined;
  }

  /**
   * From a synced cache that holds it, else from the server. A miss is the answer only in a cache
   * that would hold the object if it existed (one watching that name, or everything of the type), or
   * in one that saw the object `goneUid` deleted.
   */
  async get<T extends KubeObjectLike>(
    type: ResourceType,
    { namespace, name }: ObjectKey,
    signal?: AbortSignal,
    goneUid?: string,
  ): Promise<T | undefined> {
    // While a watch fails the caches may be stale, and the read's own failure is the news (Unreachable).
    if (this.failingCount() > 0) return this.client.get<T>(type, { namespace, name }, signal);
    const key = formatObjectKey(namespace && type.namespaced ? { namespace, name } : { name });
    let authoritative = false;
    for (const [selection, informer] of this.informers) {
      if (informer.type.apiVersion !== type.apiVersion || informer.type.plural !== type.plural || !informer.hasSynced) continue;
      if (this.selections.get(selection)!.transform) continue;
      const hit = informer.get(key);
      if (hit) return hit as T;
      const { namespace: ns, labelSelector, fieldSelector } = this.selections.get(selection)!;
      authoritative ||=
        (goneUid !== undefined && informer.wasDeleted(key, goneUid)) ||
        (!labelSelector && (!fieldSelector || fieldSelector === `metadata.name=${name}`) && (!ns || ns === namespace));
    }
    return authoritative ? undefined : this.client.get<T>(type, { namespace, name }, signal);
  }

  /** Whether the target answers, as its watches see it: undefined when nothing is watched yet. */
  reachable(): boolean | undefined {
    if (this.informers.size === 0) return undefined;
    return ![...this.informers.values()].some((i) => i.failing);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.informers.clear();
    this.selections.clear();
  }
}
