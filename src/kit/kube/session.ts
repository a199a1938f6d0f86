// One API server as a client talks to it: credentials refreshed in time, one connection pool, a
// circuit breaker, and one request/answer exchange. Error messages reach status conditions, Events
// and logs; for an untrusted server (a target cluster, whose endpoint someone else wrote) they carry
// only our words, never text the server sent.
import { Breaker } from './breaker.ts';
import { AnswerTooLargeError, CredentialPluginError, KubeError, knownReason, networkError } from './errors.ts';
import { authenticate, type ClusterAccess } from './config.ts';
import { restClientRequests } from '../metrics.ts';
import { ReasonedError } from '../conditions.ts';
import { AnswerTooLarge, closePool, connectionPool, exchange, readText, type Pool } from './transport.ts';
import { backoffDelay, sleep } from '../backoff.ts';

export interface RequestOptions {
  query?: Record<string, string | undefined>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
}

export interface ClientOptions {
  fieldManager: string;
  /** The User-Agent header: the field manager unless said (it names the program, as client-go's does). */
  userAgent?: string;
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

export interface Auth {
  headers: Record<string, string | string[]>;
  pool: Pool;
  /** When to authenticate again (a token file rotates, an exec credential expires). */
  refreshAt: number;
}

const AUTH_REFRESH_MS = 60_000;
/** Attempts for a read whose connection was closed under it (client-go retries those too). */
const GET_ATTEMPTS = 5;
const CLOSED_CONNECTION_BACKOFF = { baseMs: 100, maxMs: 800 };

/** Whether the error, or one of its causes, carries one of these codes (duck-typed: Node's errors may come from another realm). */
function hasCode(err: unknown, ...codes: string[]): boolean {
  for (let cause = err; typeof cause === 'object' && cause !== null; cause = (cause as { cause?: unknown }).cause) {
    if (codes.includes((cause as { code?: string }).code ?? '')) return true;
  }
  return false;
}

/** The server closed the connection before answering: a reset, a closed socket. */
const connectionClosed = (err: unknown): boolean => hasCode(err, 'ECONNRESET', 'EPIPE');

export class ServerSession {
  readonly server: string;
  readonly breaker?: Breaker;
  readonly timeoutMs: number;
  readonly trusted: boolean;
  /** The server as error messages name it. */
  readonly label: string;
  private auth?: Promise<Auth>;
  private pool?: Pool;
  /** The TLS options the pool was made with: an exec plugin may hand out a new client certificate. */
  private poolTls?: string;
  private readonly access: ClusterAccess;
  private readonly opts: ClientOptions;

  constructor(access: ClusterAccess, opts: ClientOptions) {
    this.access = access;
    this.opts = opts;
    this.server = access.server.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.trusted = opts.trusted ?? true;
    this.label = opts.name ?? (this.trusted ? this.server : 'the API server');
    this.breaker = opts.isolate ? new Breaker(this.label) : undefined;
  }

  /** Tells the caller's onRequest (e.g. metrics) of a request about to be sent. */
  noteRequest(method: string, path: string): void {
    this.opts.onRequest?.(method, path);
  }

  // One pool for the client's life; headers are refreshed (token files rotate, exec credentials expire).
  async authFor(): Promise<Auth> {
    // A failed attempt is not cached: the next request tries again.
    const pending = this.auth;
    const current = pending ? await pending.catch(() => undefined) : undefined;
    if (current && Date.now() < current.refreshAt) return current;
    // Another request began the refresh while this one waited: one plugin run serves them all.
    if (this.auth !== pending) return this.auth!;
    this.auth = (async () => {
      let auth;
      try {
        auth = await authenticate(this.access);
      } catch {
        // An exec plugin's error is its stderr, which may hold tokens: never pass it on.
        throw new CredentialPluginError(
          `the credential plugin of ${this.label} failed; its output is not shown because it may contain secrets`,
        );
      }
      const tls = JSON.stringify(auth.tls);
      if (!this.pool || tls !== this.poolTls) {
        // The old pool's requests finish on their connections, which then close when idle.
        this.pool = connectionPool(new URL(this.server), auth.tls, this.access.lookup);
        this.poolTls = tls;
      }
      return {
        headers: { ...auth.headers, 'User-Agent': this.opts.userAgent ?? this.opts.fieldManager },
        pool: this.pool,
        // An expiry that does not parse is none (NaN would refresh at every request).
        refreshAt: Math.min(Date.now() + AUTH_REFRESH_MS, Number.isFinite(auth.expiresAt) ? auth.expiresAt! - 10_000 : Infinity),
      };
    })();
    return this.auth;
  }

  async request<T>(method: string, path: string, init: RequestOptions = {}): Promise<T> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    // The deadline for the whole exchange, credentials and body included (the transport's headers
    // deadline comes first). A timer of our own, cleared when done: AbortSignal.timeout's would live on
    // for the whole timeout.
    const backstop = new AbortController();
    const backstopTimer = setTimeout(() => backstop.abort(new DOMException('request timed out', 'TimeoutError')), this.timeoutMs + 1_000);
    const signals = [backstop.signal, ...(init.signal ? [init.signal] : [])];
    try {
      // A credential plugin that hangs holds this request no longer than its caller allows (a Lease's
      // renewal, due within its renew deadline); the plugin run goes on for the requests after it.
      const auth = await untilAborted(this.authFor(), AbortSignal.any(signals), (reason) => networkError(this.label, reason, this.trusted));
      return await this.send<T>({ method, path, url }, auth, init, signals);
    } finally {
      clearTimeout(backstopTimer);
    }
  }

  /** One request, with the auth it goes with; `signals` end it (a deadline, the caller's). */
  private async send<T>(
    { method, path, url }: { method: string; path: string; url: URL },
    auth: Auth,
    init: RequestOptions,
    signals: AbortSignal[],
  ): Promise<T> {
    const ticket = this.breaker?.enter();
    // A server that has not answered lately gets a short time to start answering (see Breaker).
    const patience = this.breaker?.patience() ?? Infinity;
    const firstAnswer = new AbortController();
    const impatient =
      patience < this.timeoutMs ? setTimeout(() => firstAnswer.abort(new DOMException('no answer', 'TimeoutError')), patience) : undefined;
    signals.push(firstAnswer.signal);
    this.noteRequest(method, path);
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
          // Ended by its caller (a reconcile's deadline, a sweep stopping), not by the server: that
          // says nothing of whether the server answers, and must not turn every other request away.
          if (init.signal?.aborted) this.breaker?.left(ticket);
          else this.breaker?.failed(ticket, failure);
          throw failure;
        }
        // 0.1, 0.2, 0.4, 0.8 s: a storm of closed connections passes. An abort ends the wait; the
        // next attempt then fails at once.
        await sleep(backoffDelay(CLOSED_CONNECTION_BACKOFF, attempt - 1), signal);
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
      if (err instanceof AnswerTooLarge) throw this.tooLarge(code, method, path, err.limit);
      throw networkError(this.label, signal.aborted ? signal.reason : err, this.trusted);
    }
    if (code < 200 || code > 299) throw this.statusError(code, text, method, path);
    return (text ? this.parse(text, code, method, path) : undefined) as T;
  }

  async close(): Promise<void> {
    await this.auth?.catch(() => undefined);
    this.auth = undefined;
    const pool = this.pool;
    this.pool = undefined;
    if (pool) closePool(pool);
  }

  /** An answer (or a watch event, a list) past what is read of it, in our words. */
  tooLarge(code: number, method: string, path: string, limit: number | string): KubeError {
    const size = typeof limit === 'number' ? `${limit / (1024 * 1024)} MiB` : limit;
    return new AnswerTooLargeError(
      code,
      'Unknown',
      `${method} ${shortened(path)}: ${this.label} answered more than ${size}; not read further`,
    );
  }

  /** JSON.parse, but a body that is not JSON fails in our words (a SyntaxError quotes the body). */
  parse(text: string, code: number, method: string, path: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw new KubeError(
        code,
        'Unknown',
        `${method} ${shortened(path)}: ${this.label} answered with something other than JSON (HTTP ${code})`,
      );
    }
  }

  statusError(code: number, text: string, method: string, path: string): KubeError {
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
  kubeError(code: number, reason: unknown, message: unknown, method: string, path: string): KubeError {
    const ours = `${method} ${shortened(path)}: ${this.label} answered HTTP ${code}`;
    if (!this.trusted) {
      const known = knownReason(reason);
      return new KubeError(code, known, known === 'Unknown' ? ours : `${ours} (${known})`);
    }
    return new KubeError(
      code,
      typeof reason === 'string' && reason ? reason : 'Unknown',
      typeof message === 'string' && message ? message : ours,
    );
  }
}

/**
 * A request's path as errors name it: cut short. A path may hold a name read from an untrusted
 * cluster's own object (a status field), and errors reach status and Events, which a long one would
 * keep from being written.
 */
function shortened(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

/** `work`, or a rejection with `failure(reason)` as soon as `signal` aborts, whichever comes first. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal, failure: (reason: unknown) => Error): Promise<T> {
  // Left behind, its failure is no one's here (the next request learns it): never an unhandled rejection.
  work.catch(() => {});
  if (signal.aborted) return Promise.reject(failure(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(failure(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
