// HTTP/1.1 over Node's own http/https, keep-alive pools per client (requests and watches apart). We used undici (fetch) before:
// it weighed 29 MiB of RSS on import against about 9 for node:https, for nothing we need. On HTTP/1.1
// a request has its connection to itself, so a connection that died silently (a NAT or a load
// balancer forgot it) fails only the request on it, at its headers deadline, and is then dropped:
// no connection-wide health check (HTTP/2 pings) is needed to keep it from swallowing other requests.
import type { Agent as HttpAgent, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { createSecureContext, type SecureContext } from 'node:tls';
import { http } from '../builtins.ts';

/** How to verify the server and, with a client certificate, prove who we are. */
export interface TlsOptions {
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
  rejectUnauthorized: boolean;
}

/**
 * A pooled connection unused this long is closed, so we never send on one the server (or a NAT) has
 * dropped in the meantime. API servers keep idle connections longer than this (90 s or more).
 */
const IDLE_CONNECTION_MS = 30_000;
/**
 * Requests to one server at once; more wait for a free connection. A TLS connection holds about
 * 100 KiB, and a burst (a namespace check lists every type at once) would otherwise open one per
 * request: without this bound, peak RSS at the end of a 100-store deletion was 144 MiB, with it 121.
 */
const MAX_REQUEST_CONNECTIONS = 32;
/** Connections kept open for reuse after a burst (closed anyway after IDLE_CONNECTION_MS). */
const MAX_IDLE_CONNECTIONS = 8;

/** A server's connections: requests share a bounded pool; each watch holds one of its own for minutes. */
export interface Pool {
  requests: HttpAgent;
  watches: HttpAgent;
}

/** `lookup` resolves the server's name for every new connection (default: dns.lookup). */
export function connectionPool(server: URL, tls: TlsOptions, lookup?: LookupFunction): Pool {
  const secureContext = server.protocol === 'http:' ? undefined : sharedContext(tls);
  const agent = (opts: { maxSockets?: number; maxFreeSockets?: number }): HttpAgent => {
    const common = { keepAlive: true, timeout: IDLE_CONNECTION_MS, scheduling: 'lifo' as const, lookup, ...opts };
    return server.protocol === 'http:'
      ? new http.Agent(common)
      : new HttpsAgent({ ...common, ...tls, ...(secureContext ? { secureContext } : {}), maxCachedSessions: 4 });
  };
  return {
    requests: agent({ maxSockets: MAX_REQUEST_CONNECTIONS, maxFreeSockets: MAX_IDLE_CONNECTIONS }),
    watches: agent({ maxFreeSockets: MAX_IDLE_CONNECTIONS }),
  };
}

/**
 * One TLS context for all of a pool's connections. Given only the PEM texts, each connection parses
 * them into a context of its own: every watch holds a connection for minutes, each with a copy.
 * Material that does not parse gets no shared context, so each connection fails on it as before.
 */
function sharedContext({ ca, cert, key }: TlsOptions): SecureContext | undefined {
  try {
    return createSecureContext({ ca, cert, key });
  } catch {
    return undefined;
  }
}

export function closePool(pool: Pool): void {
  pool.requests.destroy();
  pool.watches.destroy();
}

/** Our deadline's error code (networkError knows it): no response headers in time. */
export const HEADERS_TIMEOUT = 'HEADERS_TIMEOUT';

export interface Exchange {
  method: string;
  url: URL;
  headers: OutgoingHttpHeaders;
  body?: string;
  agent: HttpAgent;
  signal: AbortSignal;
  /** Until the response's headers arrive; connecting and TLS included. */
  headersTimeoutMs: number;
}

/** Sends a request and resolves with the response once its headers arrived; the body is the caller's to read. */
export function exchange(x: Exchange): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const send = x.url.protocol === 'http:' ? http.request : httpsRequest;
    const headers = x.body === undefined ? x.headers : { ...x.headers, 'Content-Length': Buffer.byteLength(x.body) };
    // Node never follows a redirect, which is what we want: an API server never redirects, and
    // following one could reach anything (e.g. a metadata service). A 3xx is an error status to us.
    const req = send(x.url, { method: x.method, headers, agent: x.agent, signal: x.signal });
    // Waiting for a free connection counts against the deadline too.
    const deadline = setTimeout(() => {
      req.destroy(Object.assign(new Error('no response headers in time'), { code: HEADERS_TIMEOUT }));
      // A pooled connection that died silently: its idle siblings went the same way (a server lost
      // without a word, a NAT that forgot them all), so none of them is handed to the next request.
      if (req.reusedSocket) dropIdle(x.agent);
    }, x.headersTimeoutMs);
    req.once('response', (res) => {
      clearTimeout(deadline);
      resolve(res);
    });
    // on, not once: a socket error after the response has begun may be reported here too (a no-op then).
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(deadline);
      // A pooled connection the server (or a NAT, a load balancer) reset: it forgot its idle siblings
      // too, so a read sent again goes out on a new connection, not on the next of them.
      if (req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) dropIdle(x.agent);
      reject(err);
    });
    req.end(x.body);
  });
}

/** Closes the agent's idle connections. */
function dropIdle(agent: HttpAgent): void {
  for (const idle of Object.values(agent.freeSockets).flat()) idle?.destroy();
}

/**
 * The most of one answer read whole: a page of 500 objects of at most 1.5 MiB each (etcd's limit)
 * could be larger, but any we list is far smaller, and a server that sends more (one a user's
 * Provider Secret names may) would otherwise grow the process until it is killed.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** An answer longer than readText reads: the connection is closed at that size. */
export class AnswerTooLarge extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`the answer is larger than ${limit / (1024 * 1024)} MiB`);
    this.limit = limit;
  }
}

/** The whole body as text, up to `limit` bytes. An abort (the caller's signal) destroys the request, which ends this with an error. */
export async function readText(res: IncomingMessage, limit = MAX_ANSWER_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      res.destroy();
      throw new AnswerTooLarge(limit);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
