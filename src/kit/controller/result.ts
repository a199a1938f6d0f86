// What a reconcile asks of its queue (controller-runtime's Result): a thrown error means "retry
// with per-key backoff"; requeue() means the same without an error; requeueAfter() resets the
// backoff and comes back after a fixed delay (polling); done() waits for the next watch event.
import { formatObjectKey, type ObjectKey } from '../kube/object-key.ts';

export type Result = { readonly kind: 'done' } | { readonly kind: 'requeue' } | { readonly kind: 'requeueAfter'; readonly ms: number };

export const done = (): Result => ({ kind: 'done' });
export const requeue = (): Result => ({ kind: 'requeue' });
export const requeueAfter = (ms: number): Result => ({ kind: 'requeueAfter', ms: Math.max(0, Math.round(ms)) });

/** A reconciler works on a key (an ObjectKey's string form), never on an event: it re-reads state itself. */
export interface Reconciler {
  reconcile(key: string, signal: AbortSignal): Promise<Result>;
}

/** The queue key of an object's metadata: ObjectKey's string form, "namespace/name" (or "name"). */
export function keyOf(meta: ObjectKey): string {
  return formatObjectKey(meta);
}
