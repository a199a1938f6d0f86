// Errors from talking to an API server, reduced to what reconcilers branch on. Messages never carry a
// request body, so no Secret value can end up in them. A trusted server's own message is kept; an
// untrusted server (a target cluster) gets only our words, since messages reach status and Events.

import { HEADERS_TIMEOUT } from './transport.ts';

export class KubeError extends Error {
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.name = 'KubeError';
  }
}

/** An answer (a list's page, a watch event) past what is read of one: not read further. */
export class AnswerTooLargeError extends KubeError {}

/** The server could not be reached, or its TLS identity could not be verified. */
export class UnreachableError extends Error {
  readonly tls: boolean;
  constructor(message: string, tls = false) {
    super(message);
    this.tls = tls;
    this.name = 'UnreachableError';
  }
}

/** A kubeconfig (or the in-cluster configuration) this client cannot use: what is wrong, never a value. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** A name or manifest no request can be made of (the API server would refuse it too). */
export class InvalidRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRequestError';
  }
}

/** A kubeconfig's exec credential plugin failed; its output is never kept, since it may hold tokens. */
export class CredentialPluginError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialPluginError';
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof KubeError && err.code === 404;
export const isConflict = (err: unknown): boolean => err instanceof KubeError && err.code === 409 && err.reason === 'Conflict';
export const isAlreadyExists = (err: unknown): boolean => err instanceof KubeError && err.code === 409 && err.reason === 'AlreadyExists';
export const isGone = (err: unknown): boolean => err instanceof KubeError && err.code === 410;
/** Refused by the object's schema or validation rules (422 Invalid). */
export const isInvalid = (err: unknown): boolean => err instanceof KubeError && err.code === 422;

/** Kubernetes' StatusReason values: the only reasons we take from an untrusted server. */
const STATUS_REASONS = new Set([
  'NotFound',
  'AlreadyExists',
  'Conflict',
  'Invalid',
  'Forbidden',
  'Unauthorized',
  'BadRequest',
  'MethodNotAllowed',
  'NotAcceptable',
  'UnsupportedMediaType',
  'Gone',
  'Expired',
  'ServiceUnavailable',
  'Timeout',
  'TooManyRequests',
  'InternalError',
  'RequestEntityTooLarge',
  'ServerTimeout',
]);

/** The reason if it is a known StatusReason, else 'Unknown'. */
export const knownReason = (reason: unknown): string => (typeof reason === 'string' && STATUS_REASONS.has(reason) ? reason : 'Unknown');

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

/** Our own deadline for the response's headers (connecting and TLS included). */
const TIMEOUT_CODES = new Set([HEADERS_TIMEOUT]);

function hasTimeoutCode(err: unknown): boolean {
  for (let cause = err; typeof cause === 'object' && cause !== null; cause = (cause as { cause?: unknown }).cause) {
    if (TIMEOUT_CODES.has((cause as { code?: string }).code ?? '')) return true;
  }
  return false;
}

/**
 * Turns a fetch failure into a short, precise error naming the server as `name`. Untrusted: only the
 * error code, since the cause's message names the resolved address (and the endpoint is someone else's).
 */
export function networkError(name: string, err: unknown, trusted = true): Error {
  // Duck-typed, not instanceof: an AbortSignal's DOMException may come from another realm.
  const errorName = (err as { name?: unknown } | null | undefined)?.name;
  if (errorName === 'TimeoutError' || errorName === 'AbortError' || hasTimeoutCode(err)) {
    return new UnreachableError(`request to ${name} timed out`);
  }
  // Duck-typed too: Node's own errors come from another realm under a test runner's VM.
  const isError = (e: unknown): e is { message: unknown; cause?: unknown; code?: unknown } =>
    typeof e === 'object' && e !== null && 'message' in e;
  let cause: unknown = err;
  while (isError(cause) && cause.cause !== undefined) cause = cause.cause;
  const raw = isError(cause) ? cause.code : undefined;
  const code = typeof raw === 'string' && /^[A-Z0-9_]{1,64}$/.test(raw) ? raw : '';
  const detail = isError(cause) ? String(cause.message) : String(cause);
  if (TLS_CODES.has(code) || /^ERR_(SSL|TLS)_/.test(code) || /certificate|tls|ssl/i.test(detail)) {
    const shown = code || (trusted ? detail : 'TLS error');
    return new UnreachableError(`TLS handshake with ${name} failed (${shown}): check clusterCA and the endpoint`, true);
  }
  return new UnreachableError(trusted ? `cannot reach ${name}: ${detail}` : `cannot reach ${name} (${code || 'network error'})`);
}
