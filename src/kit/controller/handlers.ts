// Watch handlers as controller-runtime composes them: a map from the changed object to what it
// wakes, behind a predicate on updates. Most watches want exactly that, so they say it in one call
// instead of a block of added/updated/deleted handlers.
import type { ObjectKey } from '../kube/object-key.ts';
import type { Handlers, ReadonlyDeep } from './informer.ts';
import { keyOf } from './result.ts';

export type Change = 'added' | 'updated' | 'deleted';

export interface ChangeFilter<T> {
  /** The events that count; all three when unset. */
  on?: readonly Change[];
  /** Which updates count (every one when unset), e.g. desiredStateChanged. */
  when?: (old: ReadonlyDeep<T>, obj: ReadonlyDeep<T>) => boolean;
  /** An update that counts passes the old copy too: what the object named before may be woken as well. */
  old?: boolean;
}

/** Calls `fn` with the object on each of its changes that `filter` lets through (an update passes the new copy). */
export function onChange<T>(
  source: { on(handlers: Handlers<T>): unknown },
  fn: (obj: ReadonlyDeep<T>) => void,
  filter: ChangeFilter<T> = {},
): void {
  const on = new Set<Change>(filter.on ?? ['added', 'updated', 'deleted']);
  const handlers: Handlers<T> = {};
  if (on.has('added')) handlers.added = fn;
  if (on.has('updated'))
    handlers.updated = (old, obj) => {
      if (filter.when && !filter.when(old, obj)) return;
      if (filter.old) fn(old);
      fn(obj);
    };
  if (on.has('deleted')) handlers.deleted = fn;
  source.on(handlers);
}

/** Wakes `controller` for the changed object itself (controller-runtime's EnqueueRequestForObject). */
export function enqueueOnChange<T extends { metadata: ObjectKey }>(
  source: { on(handlers: Handlers<T>): unknown },
  controller: { enqueue(key: string): void },
  filter: ChangeFilter<T> = {},
): void {
  onChange(source, (obj) => controller.enqueue(keyOf(obj.metadata)), filter);
}
