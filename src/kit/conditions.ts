// Conditions with Kubernetes semantics: one per type, lastTransitionTime moves only when the
// status does, and setting an identical condition changes nothing (so it causes no write). An error
// can name the reason its condition shows.

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

/** The condition of this type in any list of conditions (ours, or what an operator or the API server wrote). */
export function getCondition<C extends { type: string }>(list: readonly C[] | undefined, type: string): C | undefined {
  return list?.find((c) => c.type === type);
}

/** Whether the condition of this type has this status (True unless said). */
export function conditionIs(list: readonly { type: string; status: string }[] | undefined, type: string, status = 'True'): boolean {
  return getCondition(list, type)?.status === status;
}

/** An error that names its own condition reason (e.g. SecretNotFound), so users see why at a glance. */
export class ReasonedError extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
    this.name = 'ReasonedError';
  }
}
