// A small JSON REST client for one API server: one connection pool per client and plain JSON in and
// out (no model classes, no Dates). client-node's clients build a new pool per call and load its
// whole generated API; this is what we need of them, in a few hundred lines. The verbs are here;
// credentials, the pool and error wording are the session's (session.ts), the watch stream watch.ts's.
import { AnswerTooLargeError, KubeError } from './errors.ts';
import type { ObjectKey } from './object-key.ts';
import type { ClusterAccess } from './config.ts';
import { resourcePath, type ResourceType } from './resources.ts';
import { ServerSession, type ClientOptions, type RequestOptions } from './session.ts';
import type { Client, DeleteOptions, Deletion, KubeObjectLike, ListResult, Selection } from './types.ts';
import { watchStream, WATCH_IDLE_MS, type WatchHandler, type WatchOptions } from './watch.ts';

// The vocabulary importers of the client have always found here.
export type { Client, DeleteOptions, Deletion, KubeObjectLike, ListResult, Selection } from './types.ts';
export type { ClientOptions, RequestOptions } from './session.ts';
export { WATCH_IDLE_MS, WatchStalledError, type WatchEventType, type WatchHandler, type WatchOptions } from './watch.ts';

/** Objects asked for in one page of a list. */
const LIST_PAGE = 500;
/** The most objects one list asks for, page after page: 200,000 of a type, far past any cluster we list. */
const MAX_LIST_ITEMS = 200_000;

export class KubeClient implements Client {
  readonly server: string;
  private readonly session: ServerSession;
  private readonly watchIdleMs: number;
  private readonly opts: ClientOptions;
  private readonly writeListeners: ((type: ResourceType, obj: KubeObjectLike) => void)[] = [];

  constructor(access: ClusterAccess, opts: ClientOptions) {
    this.opts = opts;
    this.session = new ServerSession(access, opts);
    this.server = this.session.server;
    this.watchIdleMs = opts.watchIdleMs ?? WATCH_IDLE_MS;
  }

  get fieldManager(): string {
    return this.opts.fieldManager;
  }

  request<T>(method: string, path: string, init: RequestOptions = {}): Promise<T> {
    return this.session.request<T>(method, path, init);
  }

  /** Calls `listener` with each object a write of this client returned (e.g. for caches to read their own writes). */
  onWritten(listener: (type: ResourceType, obj: KubeObjectLike) => void): void {
    this.writeListeners.push(listener);
  }

  private async write<T extends KubeObjectLike>(type: ResourceType, method: string, path: string, init: RequestOptions): Promise<T> {
    const obj = await this.request<T>(method, path, init);
    if (obj?.metadata) for (const listener of this.writeListeners) listener(type, obj);
    return obj;
  }

  async get<T extends KubeObjectLike>(type: ResourceType, { namespace, name }: ObjectKey, signal?: AbortSignal): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', resourcePath(type, namespace, name), { signal });
    } catch (err) {
      if (err instanceof KubeError && err.code === 404) return undefined;
      throw err;
    }
  }

  /**
   * Lists all pages. A page past what one answer may be (objects whoever may make them made large)
   * is asked again in smaller pages, down to one object each, from where the list stood.
   */
  async list<T extends KubeObjectLike>(
    type: ResourceType,
    opts: Selection & { namespace?: string; signal?: AbortSignal } = {},
  ): Promise<ListResult<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let asked = 0;
    let pageSize = LIST_PAGE;
    for (;;) {
      // A server whose list never ends (a continue token on every page) is not followed for ever.
      if ((asked += pageSize) > MAX_LIST_ITEMS)
        throw this.session.tooLarge(200, 'LIST', resourcePath(type, opts.namespace), `${MAX_LIST_ITEMS} objects`);
      let page: { items: T[]; metadata: { continue?: string; resourceVersion: string } };
      try {
        page = await this.request('GET', resourcePath(type, opts.namespace), {
          query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector, limit: String(pageSize), continue: cont },
          signal: opts.signal,
        });
      } catch (err) {
        if (!(err instanceof AnswerTooLargeError) || pageSize === 1) throw err;
        pageSize = Math.max(1, Math.floor(pageSize / 8));
        continue;
      }
      // List items carry no apiVersion/kind; put them back so objects look the same on every path.
      for (const item of page.items) items.push({ apiVersion: type.apiVersion, kind: type.kind, ...item });
      cont = page.metadata.continue || undefined;
      if (!cont) return { items, resourceVersion: page.metadata.resourceVersion };
    }
  }

  create<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T> {
    return this.write<T>(type, 'POST', resourcePath(type, obj.metadata.namespace), {
      body: obj,
      query: { fieldManager: this.fieldManager },
      signal,
    });
  }

  /** A PUT: fails with a Conflict when obj.metadata.resourceVersion is stale. */
  update<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T> {
    return this.write<T>(type, 'PUT', resourcePath(type, obj.metadata.namespace, obj.metadata.name), {
      body: obj,
      query: { fieldManager: this.fieldManager },
      signal,
    });
  }

  updateStatus<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T> {
    return this.write<T>(type, 'PUT', resourcePath(type, obj.metadata.namespace, obj.metadata.name, 'status'), {
      body: obj,
      query: { fieldManager: this.fieldManager },
      signal,
    });
  }

  /**
   * Server-side apply with our field manager; force takes over fields others changed (drift repair).
   * With `dryRun` the server validates and admits it, and stores nothing (kubectl's --dry-run=server).
   */
  apply<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal, opts: { dryRun?: boolean } = {}): Promise<T> {
    return this.request<T>('PATCH', resourcePath(type, obj.metadata.namespace, obj.metadata.name), {
      body: { apiVersion: type.apiVersion, kind: type.kind, ...obj },
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: this.fieldManager, force: 'true', ...(opts.dryRun ? { dryRun: 'All' } : {}) },
      signal,
    });
  }

  mergePatch<T extends KubeObjectLike>(
    type: ResourceType,
    { namespace, name }: ObjectKey,
    patch: unknown,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.write<T>(type, 'PATCH', resourcePath(type, namespace, name), {
      body: patch,
      contentType: 'application/merge-patch+json',
      query: { fieldManager: this.fieldManager },
      signal,
    });
  }

  /** RFC 6902 operations, applied all or none: a failing `test` operation fails the whole patch (422). */
  jsonPatch<T extends KubeObjectLike>(
    type: ResourceType,
    { namespace, name }: ObjectKey,
    operations: unknown[],
    signal?: AbortSignal,
  ): Promise<T> {
    return this.write<T>(type, 'PATCH', resourcePath(type, namespace, name), {
      body: operations,
      contentType: 'application/json-patch+json',
      query: { fieldManager: this.fieldManager },
      signal,
    });
  }

  /**
   * Deletes, if the object is still the one named by the preconditions (uid: that incarnation;
   * resourceVersion: still as the caller saw it). "deleted": gone from the server; "pending":
   * finalizers (or a grace period) hold it. The server answers 200 either way, with the object or a
   * Status: only a pending object carries a deletionTimestamp.
   */
  async delete(type: ResourceType, { namespace, name }: ObjectKey, opts: DeleteOptions = {}): Promise<Deletion> {
    const preconditions = {
      ...(opts.uid ? { uid: opts.uid } : {}),
      ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}),
    };
    try {
      const answer = await this.request<{ metadata?: { deletionTimestamp?: string } } | undefined>(
        'DELETE',
        resourcePath(type, namespace, name),
        {
          body: {
            kind: 'DeleteOptions',
            apiVersion: 'v1',
            propagationPolicy: opts.propagationPolicy ?? 'Background',
            ...(Object.keys(preconditions).length ? { preconditions } : {}),
          },
          signal: opts.signal,
        },
      );
      return answer?.metadata?.deletionTimestamp ? 'pending' : 'deleted';
    } catch (err) {
      if (err instanceof KubeError && err.code === 404) return 'absent';
      throw err;
    }
  }

  /** The server's gitVersion; anything that does not look like one is refused (it ends up in status). */
  async serverVersion(signal?: AbortSignal): Promise<string> {
    const version = (await this.request<{ gitVersion?: unknown } | null>('GET', '/version', { signal }))?.gitVersion;
    if (typeof version === 'string' && /^v\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]{0,60})?$/.test(version)) return version;
    throw new KubeError(200, 'Unknown', `GET /version: ${this.session.label} did not report a Kubernetes version`);
  }

  /** See watch.ts: streams events until the server ends the watch, the signal aborts, or an error occurs. */
  watch(type: ResourceType, opts: WatchOptions, onEvent: WatchHandler): Promise<void> {
    return watchStream(this.session, this.watchIdleMs, type, opts, onEvent);
  }

  close(): Promise<void> {
    return this.session.close();
  }
}
