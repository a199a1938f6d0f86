// Conditions with Kubernetes semantics: one per type, lastTransitionTime moves only when the
// status does, and setting an identical condition changes nothing (so it causes no write).
import { KubeError, UnreachableError } from './kube/errors.ts';
import { Reasons } from './reasons.ts';

/** A status condition, with Kubernetes semantics. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export function setCondition(
  current: Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime'>,
  now: Date = new Date(),
): Condition[] {
  const list = current ?? [];
  const existing = list.find((c) => c.type === next.type);
  const merged: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    ...(next.message ? { message: next.message } : {}),
    lastTransitionTime:
      existing && existing.status === next.status ? existing.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...(next.observedGeneration !== undefined ? { observedGeneration: next.observedGeneration } : {}),
  };
  if (existing && sameCondition(existing, merged)) return list;
  return existing ? list.map((c) => (c.type === next.type ? merged : c)) : [...list, merged];
}

function sameCondition(a: Condition, b: Condition): boolean {
  return (
    a.status === b.status &&
    a.reason === b.reason &&
    (a.message ?? '') === (b.message ?? '') &&
    a.observedGeneration === b.observedGeneration &&
    a.lastTransitionTime === b.lastTransitionTime
  );
}

export function getCondition(list: Condition[] | undefined, type: string): Condition | undefined {
  return list?.find((c) => c.type === type);
}

type Cond = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

// Crossplane's condition vocabulary.
export const Ready = {
  creating: (): Cond => ({ type: 'Ready', status: 'False', reason: 'Creating' }),
  deleting: (): Cond => ({ type: 'Ready', status: 'False', reason: 'Deleting' }),
  available: (): Cond => ({ type: 'Ready', status: 'True', reason: 'Available' }),
  unavailable: (message?: string): Cond => ({ type: 'Ready', status: 'False', reason: 'Unavailable', ...(message ? { message } : {}) }),
};

export const Synced = {
  success: (): Cond => ({ type: 'Synced', status: 'True', reason: 'ReconcileSuccess' }),
  error: (reason: string, message: string): Cond => ({ type: 'Synced', status: 'False', reason, message }),
};

/** An error that names its own condition reason (e.g. SecretNotFound), so users see why at a glance. */
export class ReasonedError extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
    this.name = 'ReasonedError';
  }
}

/**
 * A resource cannot prove an object it relies on (a Service or Secret someone else changed or
 * replaced): it is not Ready, and the connection keys that would lead there are withheld until it can.
 */
export class UnprovenError extends ReasonedError {
  readonly withheld: string[];
  constructor(reason: string, message: string, withheld: string[] = []) {
    super(reason, message);
    this.withheld = withheld;
    this.name = 'UnprovenError';
  }
}

/** The condition reason for an error: its own, or one derived from how the API call failed. */
export function reasonOf(err: unknown, fallback: string = Reasons.ReconcileError): string {
  if (err instanceof ReasonedError) return err.reason;
  if (err instanceof UnreachableError) return err.tls ? Reasons.TLSVerificationFailed : Reasons.Unreachable;
  if (err instanceof KubeError) {
    if (err.code === 401) return Reasons.Unauthorized;
    if (err.code === 403) return Reasons.Forbidden;
  }
  return fallback;
}
