// A small JSON REST client for one API server: one connection pool per client and plain JSON in and
// out (no model classes, no Dates). client-node's clients build a new pool per call and load its
// whole generated API; this is what we need of them, in a few hundred lines.
// Error messages reach status conditions, Events and logs; for an untrusted server (a target cluster,
// whose endpoint someone else wrote) they carry only our words, never text the server sent.
import type { IncomingMessage } from 'node:http';
import { Breaker } from './breaker.ts';
import { KubeError, knownReason, networkError } from './errors.ts';
import { authenticate, type ClusterAccess } from './config.ts';
import { resourcePath, type ResourceType } from './resources.ts';
import { restClientRequests } from '../metrics.ts';
import { ReasonedError } from '../conditions.ts';
import { closePool, connectionPool, exchange, readText, type Pool } from './transport.ts';

export interface KubeObjectLike {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string };
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

/** Server-side filters for list and watch. */
export interface Selection {
  labelSelector?: string;
  fieldSelector?: string;
}

/** What a DELETE did: removed it, left it to its finalizers, or found nothing. */
export type Deletion = 'deleted' | 'pending' | 'absent';

interface RequestInit { query?: Record<string, string | undefined>; body?: unknown; contentType?: string; accept?: string; signal?: AbortSignal }

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface ClientOptions {
  fieldManager: string;
  /** Per-request timeout (watches excepted). */
  timeoutMs?: number;
  /** Counts requests by verb, e.g. for metrics. */
  onRequest?: (method: string, path: string) => void;
  /**
   * Whether the server's own words may appear in error messages (default true: the control cluster).
   * False for target clusters: messages then hold only our words, the HTTP code and a known reason.
   */
  trusted?: boolean;
  /** How errors name the server, e.g. 'the target cluster'. Default: its URL when trusted. */
  name?: string;
  /** Fail at once while the server does not answer (a circuit breaker), so it cannot hold callers in timeouts. */
  isolate?: boolean;
  /**
   * A watch that has seen neither an event nor a bookmark for this long is ended (and its informer
   * starts a new one). The API server sends a bookmark at least every minute or so on a quiet watch.
   */
  watchIdleMs?: number;
}

/** Default bound for a silent watch: the API server's bookmarks come every 60-120 s on a quiet one. */
export const WATCH_IDLE_MS = 180_000;

/** A watch that went silent past its bound: the informer starts a new one (on a new connection if it died). */
export class WatchStalledError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WatchStalledError';
  }
}

interface Auth {
  headers: Record<string, string>;
  pool: Pool;
  /** When to authenticate again (a token file rotates, an exec credential expires). */
  refreshAt: number;
}

const AUTH_REFRESH_MS = 60_000;
const USER_AGENT = 'provider-rook';
/** Attempts for a read whose connection was closed under it (client-go retries those too). */
const GET_ATTEMPTS = 5;

/** Waits, or less if the signal aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => { clearTimeout(timer); signal.removeEventListener('abort', done); resolve(); };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Whether the error, or one of its causes, carries one of these codes (duck-typed: Node's errors may come from another realm). */
function hasCode(err: unknown, ...codes: string[]): boolean {
  for (let cause = err; typeof cause === 'object' && cause !== null; cause = (cause as { cause?: unknown }).cause) {
    if (codes.includes((cause as { code?: string }).code ?? '')) return true;
  }
  return false;
}

/** The server closed the connection before answering: a reset, a closed socket. */
const connectionClosed = (err: unknown): boolean => hasCode(err, 'ECONNRESET', 'EPIPE');

export class KubeClient {
  readonly server: string;
  private auth?: Promise<Auth>;
  private pool?: Pool;
  /** The TLS options the pool was made with: an exec plugin may hand out a new client certificate. */
  private poolTls?: string;
  private readonly breaker?: Breaker;
  private readonly timeoutMs: number;
  private readonly watchIdleMs: number;
  private readonly trusted: boolean;
  /** The server as error messages name it. */
  private readonly label: string;
  private readonly access: ClusterAccess;
  private readonly opts: ClientOptions;

  constructor(access: ClusterAccess, opts: ClientOptions) {
    this.access = access;
    this.opts = opts;
    this.server = access.server.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.watchIdleMs = opts.watchIdleMs ?? WATCH_IDLE_MS;
    this.trusted = opts.trusted ?? true;
    this.label = opts.name ?? (this.trusted ? this.server : 'the API server');
    this.breaker = opts.isolate ? new Breaker(this.label) : undefined;
  }

  get fieldManager(): string {
    return this.opts.fieldManager;
  }

  // One pool for the client's life; headers are refreshed (token files rotate, exec credentials expire).
  private async authFor(): Promise<Auth> {
    // A failed attempt is not cached: the next request tries again.
    const current = this.auth ? await this.auth.catch(() => undefined) : undefined;
    if (current && Date.now() < current.refreshAt) return current;
    this.auth = (async () => {
      let auth;
      try {
        auth = await authenticate(this.access);
      } catch {
        // An exec plugin's error is its stderr, which may hold tokens: never pass it on.
        throw new ReasonedError('CredentialPluginFailed', `the credential plugin of ${this.label} failed; its output is not shown because it may contain secrets`);
      }
      const tls = JSON.stringify(auth.tls);
      if (!this.pool || tls !== this.poolTls) {
        // The old pool's requests finish on their connections, which then close when idle.
        this.pool = connectionPool(new URL(this.server), auth.tls, this.access.lookup);
        this.poolTls = tls;
      }
      return {
        headers: { ...auth.headers, 'User-Agent': USER_AGENT },
        pool: this.pool,
        refreshAt: Math.min(Date.now() + AUTH_REFRESH_MS, (auth.expiresAt ?? Infinity) - 10_000),
      };
    })();
    return this.auth;
  }

  async request<T>(method: string, path: string, init: RequestInit = {}): Promise<T> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const auth = await this.authFor();
    // The deadline for the whole exchange, body included (the transport's headers deadline comes first).
    // A timer of our own, cleared when done: AbortSignal.timeout's would live on for the whole timeout.
    const backstop = new AbortController();
    const backstopTimer = setTimeout(() => backstop.abort(new DOMException('request timed out', 'TimeoutError')), this.timeoutMs + 1_000);
    try {
      return await this.send<T>(method, path, url, auth, init, [backstop.signal, ...(init.signal ? [init.signal] : [])]);
    } finally {
      clearTimeout(backstopTimer);
    }
  }

  private async send<T>(method: string, path: string, url: URL, auth: Auth, init: RequestInit, signals: AbortSignal[]): Promise<T> {
    const ticket = this.breaker?.enter();
    // A server that has not answered lately gets a short time to start answering (see Breaker).
    const patience = this.breaker?.patience() ?? Infinity;
    const firstAnswer = new AbortController();
    const impatient = patience < this.timeoutMs
      ? setTimeout(() => firstAnswer.abort(new DOMException('no answer', 'TimeoutError')), patience) : undefined;
    signals.push(firstAnswer.signal);
    this.opts.onRequest?.(method, path);
    const signal = AbortSignal.any(signals);
    const headers = {
      ...auth.headers,
      Accept: init.accept ?? 'application/json',
      ...(init.body !== undefined ? { 'Content-Type': init.contentType ?? 'application/json' } : {}),
    };
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    let res;
    for (let attempt = 1; ; attempt++) {
      try {
        res = await exchange({ method, url, headers, body, agent: auth.pool.requests, signal, headersTimeoutMs: this.timeoutMs });
        break;
      } catch (err) {
        // A connection the server closed under us (a reset, e.g. a pooled one it had just dropped):
        // a read is safe to send again, on a fresh connection.
        if (method !== 'GET' || attempt >= GET_ATTEMPTS || !connectionClosed(err) || signal.aborted) {
          restClientRequests.inc({ host: url.host, method, code: '<error>' });
          clearTimeout(impatient);
          // A refused endpoint (the access's lookup said so) keeps its reason and words.
          const failure = err instanceof ReasonedError ? err : networkError(this.label, signal.aborted ? signal.reason : err, this.trusted);
          this.breaker?.failed(ticket, failure);
          throw failure;
        }
        // 0.1, 0.2, 0.4, 0.8 s: a storm of closed connections passes. An abort ends the wait; the
        // next attempt then fails at once.
        await pause(100 * 2 ** (attempt - 1), signal);
      }
    }
    clearTimeout(impatient); // it answered: the body may take the whole timeout
    const code = res.statusCode ?? 0;
    restClientRequests.inc({ host: url.host, method, code: String(code) });
    this.breaker?.answered(ticket);
    let text;
    try {
      text = await readText(res);
    } catch (err) {
      throw networkError(this.label, signal.aborted ? signal.reason : err, this.trusted);
    }
    if (code < 200 || code > 299) throw this.statusError(code, text, method, path);
    return (text ? this.parse(text, code, method, path) : undefined) as T;
  }

  async get<T extends KubeObjectLike>(type: ResourceType, name: string, namespace?: string, signal?: AbortSignal): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', resourcePath(type, namespace, name), { signal });
    } catch (err) {
      if (err instanceof KubeError && err.code === 404) return undefined;
      throw err;
    }
  }

  /** Lists all pages. */
  async list<T extends KubeObjectLike>(type: ResourceType, opts: Selection & { namespace?: string; signal?: AbortSignal } = {}): Promise<ListResult<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion: string;
    do {
      const page = await this.request<{ items: T[]; metadata: { continue?: string; resourceVersion: string } }>('GET', resourcePath(type, opts.namespace), {
        query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector, limit: '500', continue: cont },
        signal: opts.signal,
      });
      // List items carry no apiVersion/kind; put them back so objects look the same on every path.
      for (const item of page.items) items.push({ apiVersion: type.apiVersion, kind: type.kind, ...item });
      cont = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (cont);
    return { items, resourceVersion };
  }

  create<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T> {
    return this.request<T>('POST', resourcePath(type, obj.metadata.namespace), { body: obj, query: { fieldManager: this.fieldManager }, signal });
  }

  /** A PUT: fails with a Conflict when obj.metadata.resourceVersion is stale. */
  update<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T> {
    return this.request<T>('PUT', resourcePath(type, obj.metadata.namespace, obj.metadata.name), { body: obj, query: { fieldManager: this.fieldManager }, signal });
  }

  updateStatus<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T> {
    return this.request<T>('PUT', resourcePath(type, obj.metadata.namespace, obj.metadata.name, 'status'), { body: obj, query: { fieldManager: this.fieldManager }, signal });
  }

  /** Server-side apply with our field manager; force takes over fields others changed (drift repair). */
  /** Server-side apply; with `dryRun` the server validates and admits it, and stores nothing (kubectl's --dry-run=server). */
  apply<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal, opts: { dryRun?: boolean } = {}): Promise<T> {
    return this.request<T>('PATCH', resourcePath(type, obj.metadata.namespace, obj.metadata.name), {
      body: { apiVersion: type.apiVersion, kind: type.kind, ...obj },
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: this.fieldManager, force: 'true', ...(opts.dryRun ? { dryRun: 'All' } : {}) },
      signal,
    });
  }

  mergePatch<T extends KubeObjectLike>(type: ResourceType, name: string, namespace: string | undefined, patch: unknown, signal?: AbortSignal): Promise<T> {
    return this.request<T>('PATCH', resourcePath(type, namespace, name), {
      body: patch, contentType: 'application/merge-patch+json', query: { fieldManager: this.fieldManager }, signal,
    });
  }

  jsonPatch<T extends KubeObjectLike>(type: ResourceType, name: string, namespace: string | undefined, ops: unknown[], signal?: AbortSignal): Promise<T> {
    return this.request<T>('PATCH', resourcePath(type, namespace, name), {
      body: ops, contentType: 'application/json-patch+json', query: { fieldManager: this.fieldManager }, signal,
    });
  }

  /**
   * Deletes, if the object is still the one named by the preconditions (uid: that incarnation;
   * resourceVersion: still as the caller saw it). "deleted": gone from the server; "pending":
   * finalizers (or a grace period) hold it. The server answers 200 either way, with the object or a
   * Status: only a pending object carries a deletionTimestamp.
   */
  async delete(type: ResourceType, name: string, namespace?: string, opts: { uid?: string; resourceVersion?: string; propagationPolicy?: string; signal?: AbortSignal } = {}): Promise<Deletion> {
    const preconditions = { ...(opts.uid ? { uid: opts.uid } : {}), ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}) };
    try {
      const answer = await this.request<{ metadata?: { deletionTimestamp?: string } } | undefined>('DELETE', resourcePath(type, namespace, name), {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: opts.propagationPolicy ?? 'Background', ...(Object.keys(preconditions).length ? { preconditions } : {}) },
        signal: opts.signal,
      });
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
    throw new KubeError(200, 'Unknown', `GET /version: ${this.label} did not report a Kubernetes version`);
  }

  /**
   * Streams watch events until the server ends the watch, the signal aborts, or an error occurs.
   * Resolves normally when the stream ends; rejects with KubeError 410 when resourceVersion is too old.
   */
  async watch(type: ResourceType, opts: Selection & { namespace?: string; resourceVersion: string; signal: AbortSignal; onOpen?: () => void },
    onEvent: (type: WatchEventType, obj: KubeObjectLike) => void): Promise<void> {
    const url = new URL(this.server + resourcePath(type, opts.namespace));
    const timeoutSeconds = 240 + Math.floor(Math.random() * 60);
    url.search = new URLSearchParams({
      watch: '1', resourceVersion: opts.resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: String(timeoutSeconds),
      ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
      ...(opts.fieldSelector ? { fieldSelector: opts.fieldSelector } : {}),
    }).toString();
    const auth = await this.authFor();
    this.opts.onRequest?.('WATCH', url.pathname);
    // The server ends the watch at timeoutSeconds; this is the backstop, cleared when the watch ends.
    const ended = new AbortController();
    const backstop = setTimeout(() => ended.abort(new DOMException('watch outlived its timeout', 'TimeoutError')), (timeoutSeconds + 30) * 1000);
    const signal = AbortSignal.any([opts.signal, ended.signal]);
    try {
      let res;
      try {
        res = await exchange({ method: 'GET', url, headers: { ...auth.headers, Accept: 'application/json' }, agent: auth.pool.watches, signal, headersTimeoutMs: this.timeoutMs });
      } catch (err) {
        restClientRequests.inc({ host: url.host, method: 'WATCH', code: '<error>' });
        const failure = err instanceof ReasonedError ? err : networkError(this.label, signal.aborted ? signal.reason : err, this.trusted);
        this.breaker?.failed(undefined, failure);
        throw failure;
      }
      this.breaker?.answered();
      const code = res.statusCode ?? 0;
      restClientRequests.inc({ host: url.host, method: 'WATCH', code: String(code) });
      if (code !== 200) {
        let text = '';
        try {
          text = await readText(res);
        } catch {
          // the status alone says enough
        }
        throw this.statusError(code, text, 'WATCH', url.pathname);
      }
      opts.onOpen?.();
      await this.readEvents(res, type, url.pathname, opts.signal, onEvent);
    } finally {
      clearTimeout(backstop);
    }
  }

  /** Reads a watch's newline-separated events, ending it when the server says nothing for watchIdleMs. */
  private async readEvents(res: IncomingMessage, type: ResourceType, path: string, signal: AbortSignal,
    onEvent: (type: WatchEventType, obj: KubeObjectLike) => void): Promise<void> {
    let stalled = false;
    const idle = setTimeout(() => {
      stalled = true;
      res.destroy();
    }, this.watchIdleMs);
    res.setEncoding('utf8');
    let buffered = '';
    try {
      for await (const chunk of res) {
        idle.refresh();
        buffered += chunk as string;
        let nl;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (!line.trim()) continue;
          const event = this.parse(line, 200, 'WATCH', path) as { type: WatchEventType; object: KubeObjectLike & { code?: unknown; reason?: unknown; message?: unknown } };
          if (event.type === 'ERROR') {
            const { code, reason, message } = event.object ?? {};
            throw this.kubeError(Number.isInteger(code) ? code as number : 500, reason, message, 'WATCH', path);
          }
          onEvent(event.type, event.type === 'BOOKMARK' ? event.object : { apiVersion: type.apiVersion, kind: type.kind, ...event.object });
        }
      }
    } catch (err) {
      if (err instanceof KubeError) throw err;
      if (signal.aborted) return;
      if (!stalled) throw networkError(this.label, err, this.trusted);
    } finally {
      clearTimeout(idle);
      // An error thrown above leaves the stream open: close it, and its connection.
      if (!res.complete) res.destroy();
    }
    if (stalled) {
      throw new WatchStalledError(`the watch of ${type.plural} on ${this.label} saw neither an event nor a bookmark for ${this.watchIdleMs / 1000} s`);
    }
  }

  async close(): Promise<void> {
    await this.auth?.catch(() => undefined);
    this.auth = undefined;
    const pool = this.pool;
    this.pool = undefined;
    if (pool) closePool(pool);
  }

  /** JSON.parse, but a body that is not JSON fails in our words (a SyntaxError quotes the body). */
  private parse(text: string, code: number, method: string, path: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw new KubeError(code, 'Unknown', `${method} ${path}: ${this.label} answered with something other than JSON (HTTP ${code})`);
    }
  }

  private statusError(code: number, text: string, method: string, path: string): KubeError {
    if (code === 401) return new KubeError(401, 'Unauthorized', 'the API server rejected the credentials (401 Unauthorized)');
    let status: { reason?: unknown; message?: unknown } = {};
    try {
      status = (JSON.parse(text) ?? {}) as typeof status;
    } catch {
      // not a Status body (e.g. a proxy's HTML page)
    }
    return this.kubeError(code, status.reason, status.message, method, path);
  }

  /** An error from a Status: the server's reason and message when trusted, else a known reason and our words. */
  private kubeError(code: number, reason: unknown, message: unknown, method: string, path: string): KubeError {
    const ours = `${method} ${path}: ${this.label} answered HTTP ${code}`;
    if (!this.trusted) {
      const known = knownReason(reason);
      return new KubeError(code, known, known === 'Unknown' ? ours : `${ours} (${known})`);
    }
    return new KubeError(code, typeof reason === 'string' && reason ? reason : 'Unknown', typeof message === 'string' && message ? message : ours);
  }
}
