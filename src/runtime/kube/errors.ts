// Errors from talking to an API server, reduced to what reconcilers branch on. Messages carry the
// server's own message (never a request body), so no Secret value can end up in them.

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

/** The server could not be reached, or its TLS identity could not be verified. */
export class UnreachableError extends Error {
  readonly tls: boolean;
  constructor(message: string, tls = false) {
    super(message);
    this.tls = tls;
    this.name = 'UnreachableError';
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof KubeError && err.code === 404;
export const isConflict = (err: unknown): boolean => err instanceof KubeError && err.code === 409 && err.reason === 'Conflict';
export const isAlreadyExists = (err: unknown): boolean => err instanceof KubeError && err.code === 409 && err.reason === 'AlreadyExists';
export const isGone = (err: unknown): boolean => err instanceof KubeError && err.code === 410;
export const isUnauthorized = (err: unknown): boolean => err instanceof KubeError && err.code === 401;
export const isForbidden = (err: unknown): boolean => err instanceof KubeError && err.code === 403;

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_SIGNATURE_FAILURE', 'ERR_SSL_WRONG_VERSION_NUMBER',
]);

/** Turns a fetch failure into a short, precise error. */
export function networkError(server: string, err: unknown): Error {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    return new UnreachableError(`request to ${server} timed out`);
  }
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause;
  const code = (cause as { code?: string }).code ?? '';
  const detail = cause instanceof Error ? cause.message : String(cause);
  if (TLS_CODES.has(code) || /certificate|tls|ssl/i.test(detail)) {
    return new UnreachableError(`TLS handshake with ${server} failed (${code || detail}): check clusterCA and the endpoint`, true);
  }
  return new UnreachableError(`cannot reach ${server}: ${detail}`);
}
