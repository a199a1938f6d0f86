// The watch stream: one long GET on the session's watch connections, read as newline-separated
// events, ended by the server's timeout, the caller's signal, an error, or a silence past its bound.
import type { IncomingMessage } from 'node:http';
import { KubeError, networkError } from './errors.ts';
import { resourcePath, type ResourceType } from './resources.ts';
import { restClientRequests } from '../metrics.ts';
import { ReasonedError } from '../conditions.ts';
import { exchange, readText } from './transport.ts';
import type { Auth, ServerSession } from './session.ts';
import type { KubeObjectLike, Selection } from './types.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export type WatchOptions = Selection & { namespace?: string; resourceVersion: string; signal: AbortSignal; onOpen?: () => void };

export type WatchHandler = (type: WatchEventType, obj: KubeObjectLike) => void;

/** Default bound for a silent watch: the API server's bookmarks come every 60-120 s on a quiet one. */
export const WATCH_IDLE_MS = 180_000;

/** A watch that went silent past its bound: the informer starts a new one (on a new connection if it died). */
export class WatchStalledError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WatchStalledError';
  }
}

/**
 * Streams watch events until the server ends the watch, the signal aborts, or an error occurs.
 * Resolves normally when the stream ends; rejects with KubeError 410 when resourceVersion is too old.
 */
export async function watchStream(
  session: ServerSession,
  watchIdleMs: number,
  type: ResourceType,
  opts: WatchOptions,
  onEvent: WatchHandler,
): Promise<void> {
  const { url, timeoutSeconds } = watchUrl(session, type, opts);
  const auth = await session.authFor();
  session.noteRequest('WATCH', url.pathname);
  // The server ends the watch at timeoutSeconds; this is the backstop, cleared when the watch ends.
  const ended = new AbortController();
  const backstop = setTimeout(
    () => ended.abort(new DOMException('watch outlived its timeout', 'TimeoutError')),
    (timeoutSeconds + 30) * 1000,
  );
  const signal = AbortSignal.any([opts.signal, ended.signal]);
  try {
    const res = await openWatch(session, url, auth, signal);
    opts.onOpen?.();
    await readEvents({ session, watchIdleMs, type, path: url.pathname, signal: opts.signal }, res, onEvent);
  } finally {
    clearTimeout(backstop);
  }
}

/** The watch's URL, with a timeout spread over 4-5 minutes so that watches opened together do not all end together. */
function watchUrl(session: ServerSession, type: ResourceType, opts: WatchOptions): { url: URL; timeoutSeconds: number } {
  const url = new URL(session.server + resourcePath(type, opts.namespace));
  const timeoutSeconds = 240 + Math.floor(Math.random() * 60);
  url.search = new URLSearchParams({
    watch: '1',
    resourceVersion: opts.resourceVersion,
    allowWatchBookmarks: 'true',
    timeoutSeconds: String(timeoutSeconds),
    ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
    ...(opts.fieldSelector ? { fieldSelector: opts.fieldSelector } : {}),
  }).toString();
  return { url, timeoutSeconds };
}

/**
 * Sends the watch's GET and returns the open 200 response. Counts the request, tells the session's
 * breaker whether the server answered, and turns any other status into the session's error for it.
 */
async function openWatch(session: ServerSession, url: URL, auth: Auth, signal: AbortSignal): Promise<IncomingMessage> {
  let res;
  try {
    res = await exchange({
      method: 'GET',
      url,
      headers: { ...auth.headers, Accept: 'application/json' },
      agent: auth.pool.watches,
      signal,
      headersTimeoutMs: session.timeoutMs,
    });
  } catch (err) {
    restClientRequests.inc({ host: url.host, method: 'WATCH', code: '<error>' });
    const failure = err instanceof ReasonedError ? err : networkError(session.label, signal.aborted ? signal.reason : err, session.trusted);
    // Stopped by its caller (an informer going), the server said nothing of itself.
    if (!signal.aborted) session.breaker?.failed(undefined, failure);
    throw failure;
  }
  session.breaker?.answered();
  const code = res.statusCode ?? 0;
  restClientRequests.inc({ host: url.host, method: 'WATCH', code: String(code) });
  if (code !== 200) {
    let text = '';
    try {
      text = await readText(res);
    } catch {
      // the status alone says enough
    }
    throw session.statusError(code, text, 'WATCH', url.pathname);
  }
  return res;
}

/** The longest watch event read: an object is at most 1.5 MiB in etcd. */
const MAX_EVENT_CHARS = 16 * 1024 * 1024;

/** Reads a watch's newline-separated events, ending it when the server says nothing for watchIdleMs. */
async function readEvents(
  watch: { session: ServerSession; watchIdleMs: number; type: ResourceType; path: string; signal: AbortSignal },
  res: IncomingMessage,
  onEvent: WatchHandler,
): Promise<void> {
  const { session, watchIdleMs, type, path, signal } = watch;
  let stalled = false;
  const idle = setTimeout(() => {
    stalled = true;
    res.destroy();
  }, watchIdleMs);
  res.setEncoding('utf8');
  // The part of an event not ended yet, in pieces: only a new piece is searched for the line's end.
  let partial: string[] = [];
  let partialChars = 0;
  try {
    for await (const chunk of res) {
      idle.refresh();
      let text = chunk as string;
      let nl;
      while ((nl = text.indexOf('\n')) >= 0) {
        const line = partial.join('') + text.slice(0, nl);
        partial = [];
        partialChars = 0;
        text = text.slice(nl + 1);
        if (!line.trim()) continue;
        const event = session.parse(line, 200, 'WATCH', path) as {
          type: WatchEventType;
          object: KubeObjectLike & { code?: unknown; reason?: unknown; message?: unknown };
        };
        if (event.type === 'ERROR') {
          const { code, reason, message } = event.object ?? {};
          throw session.kubeError(Number.isInteger(code) ? (code as number) : 500, reason, message, 'WATCH', path);
        }
        onEvent(event.type, event.type === 'BOOKMARK' ? event.object : { apiVersion: type.apiVersion, kind: type.kind, ...event.object });
      }
      if (!text) continue;
      partial.push(text);
      partialChars += text.length;
      // One event is one object (at most 1.5 MiB in etcd): a line that never ends is not kept growing.
      if (partialChars > MAX_EVENT_CHARS)
        throw session.tooLarge(200, 'WATCH', path, `${MAX_EVENT_CHARS / (1024 * 1024)} Mi characters in one event`);
    }
  } catch (err) {
    if (err instanceof KubeError) throw err;
    if (signal.aborted) return;
    if (!stalled) throw networkError(session.label, err, session.trusted);
  } finally {
    clearTimeout(idle);
    // An error thrown above leaves the stream open: close it, and its connection.
    if (!res.complete) res.destroy();
  }
  if (stalled) {
    throw new WatchStalledError(
      `the watch of ${type.plural} on ${session.label} saw neither an event nor a bookmark for ${watchIdleMs / 1000} s`,
    );
  }
}
