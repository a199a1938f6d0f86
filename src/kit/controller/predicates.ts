// Which watch events deserve a reconcile. Our own status writes must not wake the controller that
// wrote them (crossplane's DesiredStateChanged), or every reconcile would cause another.
import { type ReadonlyDeep } from './informer.ts';
import type { ObjectMeta } from '../meta.ts';
import { sameJson } from '../json.ts';

// Written by the managed reconciler itself around a create; they carry no user intent.
const VOLATILE_ANNOTATIONS = new Set(['crossplane.io/external-create-pending', 'crossplane.io/external-create-failed']);

function intent(meta: ReadonlyDeep<ObjectMeta>): unknown {
  const annotations = Object.fromEntries(Object.entries(meta.annotations ?? {}).filter(([k]) => !VOLATILE_ANNOTATIONS.has(k)));
  return [meta.generation, meta.labels ?? {}, annotations, meta.deletionTimestamp, meta.finalizers ?? []];
}

/** The spec (generation), labels, annotations, finalizers or deletion changed; status alone did not count. */
export function desiredStateChanged(old: ReadonlyDeep<{ metadata: ObjectMeta }>, obj: ReadonlyDeep<{ metadata: ObjectMeta }>): boolean {
  return !sameJson(intent(old.metadata), intent(obj.metadata));
}
