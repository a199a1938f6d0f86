// An informer (kube-rs watcher + reflector): list, then watch from the list's resourceVersion,
// keeping a cache and telling handlers what changed. It never gives up: watch ends are resumed,
// 410 Gone relists (and reports objects that vanished meanwhile), a watch gone silent (no event, no
// bookmark within the client's bound) is replaced, a failing list backs off up to 30 s and a failing
// watch is retried every second (see LIST_BACKOFF). A kind that is not
// served yet (its CRD missing) waits for whenServed instead of asking again and again. Cached objects
// drop metadata.managedFields, which nothing here reads and which is often half an object's size,
// and, where asked, all but metadata and the fields named (client-go's transform).
// One file past 400 lines on purpose: the list/watch loop, its health and the cache it fills share
// one state (each scope's loop) and change together.
import type { Probe } from '../health.ts';
import { WATCH_IDLE_MS, WatchStalledError, type KubeClient, type KubeObjectLike, type Selection } from '../kube/client.ts';
import { isGone, isNotFound } from '../kube/errors.ts';
import type { ResourceType } from '../kube/resources.ts';
import type { Logger } from '../logger.ts';
import { formatObjectKey, type ObjectKey } from '../kube/object-key.ts';
import { keyOf } from './result.ts';
import { backoffDelay, sleep } from '../backoff.ts';

/**
 * A failing list is retried after 1 s, 2 s, ... 30 s; a watch after 1 s each time (the count starts
 * again at every watch sent), so a target is seen back within a second: a 30-s cap took chaos
 * scenario 2's recovery from 0.4 to 7.8 s. A down server refuses at once: the probes cost little.
 */
const LIST_BACKOFF = { baseMs: 1000, maxMs: 30_000 };
/** Established a moment before the server serves it: backing off only if that keeps happening. */
const NOT_SERVED_BACKOFF = { baseMs: 250, maxMs: 30_000 };

/**
 * Deeply read-only. What a cache hands out is the one copy every reader shares: a reader that wants
 * to change it copies it first (structuredClone), so no controller ever sees another's edits.
 */
export type ReadonlyDeep<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer E)[]
    ? readonly ReadonlyDeep<E>[]
    : T extends object
      ? { readonly [K in keyof T]: ReadonlyDeep<T[K]> }
      : T;

/** A cache as its readers see it: read-only objects, by key (an ObjectKey, or its "namespace/name" form). */
export interface CacheReader<T> {
  readonly hasSynced: boolean;
  get: (key: string | ObjectKey) => ReadonlyDeep<T> | undefined;
  list(): ReadonlyDeep<T>[];
}

/**
 * What most readers take of a cache: an object by key (an ObjectKey, or its "namespace/name" form),
 * and all of them. The objects are the cache's own: a reader never changes them (copyOf makes a copy
 * to change; CacheReader types them read-only).
 */
export interface Cache<T> {
  // A property, not a method, so its parameter is checked strictly: a Map keyed by string is no Cache.
  get: (key: string | ObjectKey) => ReadonlyDeep<T> | undefined;
  list(): ReadonlyDeep<T>[];
}

/** A mutable copy of a cached object, to change and write back. */
export const copyOf = <T>(cached: ReadonlyDeep<T>): T => structuredClone(cached) as T;

/** What a watch is told: the cache's own objects, read-only like every reader's. */
export interface Handlers<T> {
  // Properties, not methods, so that a handler typed for a mutable object is refused.
  added?: (obj: ReadonlyDeep<T>) => void;
  updated?: (oldObj: ReadonlyDeep<T>, obj: ReadonlyDeep<T>) => void;
  deleted?: (obj: ReadonlyDeep<T>) => void;
}

export interface InformerOptions extends Selection {
  /** Watch only these namespaces (one list/watch each); all namespaces when unset. */
  namespaces?: string[];
  log: Logger;
  /** Called when a list or watch succeeds again after failing (e.g. the server is back). */
  onRecovered?: () => void;
  /** Called when a list or watch fails after working (e.g. the server went away); not again until it recovers. */
  onFailed?: () => void;
  /** Resolves once the kind is served (e.g. its CRD is Established); a list that finds it missing waits for it. */
  whenServed?: (signal: AbortSignal) => Promise<void>;
  /** Cache only metadata and these top-level fields (e.g. ['status']): for big objects of which little is read. */
  keep?: string[];
  /**
   * What the cache holds of each object, made from it as received (after `keep`): for objects whose
   * size others choose, held as a digest of what is compared. Must not change metadata.
   */
  transform?: (obj: KubeObjectLike) => KubeObjectLike;
  /** How long a list/watch loop may go without any sign of progress before it counts as stuck. */
  stuckAfterMs?: number;
}

/**
 * A loop that makes progress lists, opens watches, receives events or bookmarks (at least every
 * minute or two on a quiet watch), or fails and retries (at most every 30 s); past the silent
 * watch's own bound and then some, nothing should be that quiet.
 */
const STUCK_AFTER_MS = WATCH_IDLE_MS + 120_000;

/** The state one scope's list/watch loop keeps between passes. */
interface ScopeLoop {
  namespace: string | undefined;
  /** The key of progress: the namespace, or '' for all namespaces. */
  scope: string;
  markSynced: () => void;
  /** Where the next watch resumes; undefined means list first. */
  resourceVersion?: string;
  /** Failures in a row, for the backoff; reset each time a watch is about to start. */
  failures: number;
  /** Whether "cannot list yet" was logged (once per scope). */
  toldUser: boolean;
  /** Times in a row the kind was found not served, for its own backoff. */
  notServed: number;
  /** A scope that never worked (a CRD not installed yet) recovers when it first works, but never "fails". */
  health: 'new' | 'ok' | 'failing';
  /** Changes (added, modified, deleted objects) the current pass received. */
  events: number;
  /** Passes in a row that ended at once having received nothing. */
  quick: number;
}

export class Informer<T extends KubeObjectLike> implements Probe {
  private readonly store = new Map<string, T>();
  /** Our own writes, newer than the watch has delivered yet (client-go's mutation cache): see remember. */
  private readonly written = new Map<string, { obj: T; at: number }>();
  /** The uid each key last had when the server said it was deleted (the latest GONE_KEPT): see wasDeleted. */
  private readonly gone = new Map<string, string>();
  private readonly handlers: Handlers<T>[] = [];
  private readonly abort = new AbortController();
  private loops?: Promise<void>[];
  private synced?: Promise<unknown>;
  private isSynced = false;
  private failingScopes = 0;
  /** Per scope: when its loop last showed progress, or undefined while it rightly waits (kind not served). */
  private readonly progress = new Map<string, number | undefined>();

  readonly client: KubeClient;
  readonly type: ResourceType;
  private readonly opts: InformerOptions;

  constructor(client: KubeClient, type: ResourceType, opts: InformerOptions) {
    this.client = client;
    this.type = type;
    this.opts = opts;
  }

  /** Whether this informer caches objects of `type`. */
  caches(type: ResourceType): boolean {
    return type.apiVersion === this.type.apiVersion && type.kind === this.type.kind;
  }

  on(handlers: Handlers<T>): this {
    this.handlers.push(handlers);
    return this;
  }

  /** Starts the list/watch loop; resolves once the cache holds a first full list. */
  async start(): Promise<void> {
    if (!this.synced) {
      const scopes = this.opts.namespaces ?? [undefined];
      const started = scopes.map((namespace) => {
        let markSynced!: () => void;
        const synced = new Promise<void>((resolve) => (markSynced = resolve));
        return { loop: this.run(namespace, markSynced), synced };
      });
      this.loops = started.map((s) => s.loop);
      this.synced = Promise.all(started.map((s) => s.synced)).then(() => {
        this.isSynced = true;
      });
    }
    await this.synced;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.loops ?? []);
  }

  /** The cache holds a full list of every scope: a miss means the object is not there (as of the watch). */
  get hasSynced(): boolean {
    return this.isSynced;
  }

  /** A scope whose loop has shown no progress for too long (a hang no bound caught). */
  stuck(now: number): string | undefined {
    const bound = this.opts.stuckAfterMs ?? STUCK_AFTER_MS;
    for (const [scope, at] of this.progress) {
      if (at !== undefined && now - at > bound) {
        return `informer ${this.type.plural}${scope ? ` in ${scope}` : ''}: no list, watch, event or retry for ${Math.round((now - at) / 1000)} s`;
      }
    }
    return undefined;
  }

  /** Some scope's list or watch is failing now (after having worked, or never having worked). */
  get failing(): boolean {
    return this.failingScopes > 0;
  }

  get(at: string | ObjectKey): ReadonlyDeep<T> | undefined {
    return this.held(formatObjectKey(at)) as ReadonlyDeep<T> | undefined;
  }

  /** The object at `key`, as this cache holds it (or as a write of ours returned it). */
  private held(key: string): T | undefined {
    const mine = this.written.get(key);
    if (mine && performance.now() - mine.at < WRITTEN_TTL_MS) return mine.obj;
    if (mine) this.written.delete(key);
    return this.store.get(key);
  }

  /**
   * An object as a write of ours returned it. Until the watch delivers that version (or a newer
   * one), get() answers with it: the next pass reads what it wrote, rather than writing again from
   * a stale copy and meeting a conflict. Handlers still run on the watch's event, as before. Only
   * objects this cache holds already are remembered (a selection may exclude the others).
   */
  remember(obj: T): void {
    const key = keyOf(obj.metadata);
    const held = this.store.get(key);
    if (!held || !newer(obj.metadata.resourceVersion, held.metadata.resourceVersion)) return;
    const copy = structuredClone(this.kept(obj));
    delete (copy.metadata as { managedFields?: unknown }).managedFields;
    const mine = this.written.get(key);
    if (mine && !newer(copy.metadata.resourceVersion, mine.obj.metadata.resourceVersion)) return;
    this.written.set(key, { obj: copy, at: performance.now() });
  }

  /**
   * Whether the server told this cache (a watch event, or a list without it) that the object `uid`
   * at `key` was deleted, and nothing has been seen there since: a miss that is an answer.
   */
  wasDeleted(key: string, uid: string): boolean {
    return !this.store.has(key) && this.gone.get(key) === uid;
  }

  /** This cache, read-only (the same objects, typed so that no reader can change them). */
  get reader(): CacheReader<T> {
    return this as unknown as CacheReader<T>;
  }

  list(): ReadonlyDeep<T>[] {
    return this.all() as ReadonlyDeep<T>[];
  }

  private all(): T[] {
    if (this.written.size === 0) return [...this.store.values()];
    return [...this.store.keys()].map((key) => this.held(key)!);
  }

  /** One scope's list/watch loop: it runs until stop(), each failure handled and retried. */
  private async run(namespace: string | undefined, markSynced: () => void): Promise<void> {
    const signal = this.abort.signal;
    const loop: ScopeLoop = {
      namespace,
      scope: namespace ?? '',
      markSynced,
      failures: 0,
      toldUser: false,
      notServed: 0,
      health: 'new',
      events: 0,
      quick: 0,
    };
    this.alive(loop);
    while (!signal.aborted) {
      const started = performance.now();
      loop.events = 0;
      try {
        await this.listAndWatch(loop);
      } catch (err) {
        if (signal.aborted) break;
        this.alive(loop);
        await this.recover(loop, err);
      }
      // A watch that ends (or is refused as too old) as soon as it opens, having brought nothing, is
      // opened again at once the first time, then a second later: a server doing that every time
      // would otherwise be asked without pause.
      loop.quick = loop.events === 0 && performance.now() - started < QUICK_PASS_MS ? loop.quick + 1 : 0;
      if (loop.quick > 1) await sleep(QUICK_PASS_MS, signal);
    }
  }

  /** One pass: lists if there is no resourceVersion to resume from, then watches until the watch ends. */
  private async listAndWatch(loop: ScopeLoop): Promise<void> {
    const { namespace } = loop;
    const signal = this.abort.signal;
    if (loop.resourceVersion === undefined) {
      const listed = await this.client.list<T>(this.type, {
        namespace,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        signal,
      });
      this.replace(listed.items, namespace);
      loop.resourceVersion = listed.resourceVersion;
      loop.notServed = 0;
      loop.markSynced();
      this.succeeded(loop);
    }
    loop.failures = 0;
    const { labelSelector, fieldSelector } = this.opts;
    await this.client.watch(
      this.type,
      { namespace, labelSelector, fieldSelector, resourceVersion: loop.resourceVersion, signal, onOpen: () => this.succeeded(loop) },
      (type, obj) => {
        this.alive(loop);
        // A bookmark carries only a resourceVersion; any other event without a named object is not cached.
        if (type !== 'BOOKMARK' && !wellFormed(obj))
          return void this.opts.log.debug('ignoring a watch event without an object name', { resource: this.type.plural });
        // Only a change counts as something brought (a server could send a bookmark before each close).
        if (type !== 'BOOKMARK') loop.events++;
        const version = (obj as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
        if (typeof version === 'string') loop.resourceVersion = version;
        if (type === 'ADDED' || type === 'MODIFIED') this.upsert(obj as T);
        else if (type === 'DELETED') this.remove(obj as T);
      },
    );
  }

  /** What a failed pass means: a relist, a new watch, a wait for the kind to be served, or a failure to back off from. */
  private async recover(loop: ScopeLoop, err: unknown): Promise<void> {
    const { namespace } = loop;
    if (isGone(err)) {
      loop.resourceVersion = undefined; // too old: relist (routine, not a failure)
      this.opts.log.debug('watch history lost (410 Gone); relisting', {
        resource: this.type.plural,
        ...(namespace ? { namespace } : {}),
      });
      return;
    }
    if (err instanceof WatchStalledError) {
      // Resumed from the last resourceVersion, so nothing is missed; a dead connection was dropped.
      this.opts.log.warn('watch went silent; starting a new one', {
        resource: this.type.plural,
        ...(namespace ? { namespace } : {}),
        error: err.message,
      });
      return;
    }
    // Not served (yet, or any more): wait for it to be, rather than asking again and again.
    if (isNotFound(err) && this.opts.whenServed) return this.waitUntilServed(loop, this.opts.whenServed);
    await this.backOff(loop, err);
  }

  /**
   * Waits for an unserved kind to be served, its cache empty meanwhile; it does not count as failing.
   * The server answered, so a scope that failed before (the server down) has recovered: else the
   * target would count as failing until the kind is served, and whatever waits for its recovery
   * would wait for that too.
   */
  private async waitUntilServed(loop: ScopeLoop, whenServed: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const signal = this.abort.signal;
    this.succeeded(loop);
    loop.resourceVersion = undefined;
    // Nothing of an unserved kind exists: an empty cache is the truth, and reads need not ask.
    this.replace([], loop.namespace);
    loop.markSynced();
    this.opts.log.debug('kind not served; waiting for it', { resource: this.type.plural });
    this.progress.set(loop.scope, undefined);
    await whenServed(signal);
    this.alive(loop);
    // Established a moment before the server serves it: back off only if that keeps happening.
    if (loop.notServed > 0) await sleep(backoffDelay(NOT_SERVED_BACKOFF, loop.notServed), signal);
    loop.notServed++;
  }

  /** Marks the scope failing (telling onFailed if it had worked), logs, and sleeps before the next pass. */
  private async backOff(loop: ScopeLoop, err: unknown): Promise<void> {
    const { namespace } = loop;
    if (loop.health !== 'failing') this.failingScopes++;
    if (loop.health === 'ok') this.opts.onFailed?.();
    loop.health = 'failing';
    const delay = backoffDelay(LIST_BACKOFF, loop.failures++);
    const fields = { resource: this.type.plural, ...(namespace ? { namespace } : {}), error: (err as Error).message, retryInMs: delay };
    // Before the first list nothing works (a CRD not installed, RBAC missing): say so once, plainly.
    if (loop.resourceVersion === undefined && !loop.toldUser) {
      this.opts.log.warn('cannot list yet; retrying', fields);
      loop.toldUser = true;
    } else {
      this.opts.log.debug('list/watch failed; retrying', fields);
    }
    await sleep(delay, this.abort.signal);
  }

  /** The scope's loop shows progress (the stuck() probe reads it). */
  private alive(loop: ScopeLoop): void {
    this.progress.set(loop.scope, performance.now()); // the monotonic clock, as Health's
  }

  /** A list or watch worked: progress, and a recovery if the scope was failing. */
  private succeeded(loop: ScopeLoop): void {
    this.alive(loop);
    if (loop.health === 'failing') {
      this.failingScopes--;
      this.opts.onRecovered?.();
    }
    loop.health = 'ok';
  }

  /** A fresh list of one scope: what it no longer holds was deleted meanwhile. */
  private replace(items: T[], namespace: string | undefined): void {
    const seen = new Set<string>();
    for (const item of items) {
      if (!wellFormed(item)) continue;
      seen.add(keyOf(item.metadata));
      this.upsert(item);
    }
    for (const [key, obj] of this.store) {
      if (!seen.has(key) && (namespace === undefined || obj.metadata.namespace === namespace)) this.remove(obj);
    }
  }

  /** What the cache keeps of an object as received. */
  private kept(received: T): T {
    const kept = this.opts.keep ? trimmed(received, this.opts.keep) : received;
    return this.opts.transform ? (this.opts.transform(kept) as T) : kept;
  }

  private upsert(received: T): void {
    const obj = this.kept(received);
    delete (obj.metadata as { managedFields?: unknown }).managedFields;
    const key = keyOf(obj.metadata);
    const old = this.store.get(key);
    const mine = this.written.get(key);
    if (mine && !newer(mine.obj.metadata.resourceVersion, obj.metadata.resourceVersion)) this.written.delete(key);
    if (old?.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    this.gone.delete(key);
    this.store.set(key, obj);
    for (const h of this.handlers) {
      this.notify(() => {
        if (old) h.updated?.(old as ReadonlyDeep<T>, obj as ReadonlyDeep<T>);
        else h.added?.(obj as ReadonlyDeep<T>);
      });
    }
  }

  /**
   * Runs one handler: one that throws (on an object a hostile server shaped) is logged, and neither
   * keeps the others from the event nor passes for a failure of the watch.
   */
  private notify(call: () => void): void {
    try {
      call();
    } catch (err) {
      this.opts.log.error('informer event handler failed', { resource: this.type.plural, error: (err as Error).message });
    }
  }

  private remove(obj: T): void {
    const key = keyOf(obj.metadata);
    const old = this.store.get(key);
    this.written.delete(key);
    if (!old) return;
    this.store.delete(key);
    if (old.metadata.uid) {
      this.gone.set(key, old.metadata.uid);
      if (this.gone.size > GONE_KEPT) this.gone.delete(this.gone.keys().next().value!);
    }
    for (const h of this.handlers) this.notify(() => h.deleted?.(old as ReadonlyDeep<T>));
  }
}

/** How soon a pass that brought nothing counts as ended at once, and how long the next waits after two. */
const QUICK_PASS_MS = 1_000;

/** An object a cache can hold: a metadata object with a name (a bookmark's object aside, which has none). */
function wellFormed(obj: unknown): obj is KubeObjectLike {
  const meta = (obj as { metadata?: unknown } | null)?.metadata as { name?: unknown } | null | undefined;
  return typeof meta === 'object' && meta !== null && typeof meta.name === 'string';
}

/** How many deletions an informer remembers (wasDeleted): enough for a burst's next passes; older ones read live. */
const GONE_KEPT = 1024;

/** How long a remembered write answers reads without the watch confirming it (a watch may lag, not this long). */
const WRITTEN_TTL_MS = 30_000;

/**
 * Whether resourceVersion a is newer than b. Versions are opaque to clients in principle; every API
 * server backed by etcd writes them as increasing integers, as client-go's mutation cache assumes.
 * Anything else is never newer, so the watch's copy is used.
 */
function newer(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return a.length !== b.length ? a.length > b.length : a > b;
}

function trimmed<T extends KubeObjectLike>(obj: T, keep: string[]): T {
  const out: Record<string, unknown> = { apiVersion: obj.apiVersion, kind: obj.kind, metadata: obj.metadata };
  for (const field of keep) if (field in obj) out[field] = (obj as Record<string, unknown>)[field];
  return out as T;
}
