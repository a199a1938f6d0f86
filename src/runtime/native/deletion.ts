// Deleting what a managed resource owns in a target: only what its marks prove ours, and only the
// very copy that was checked (the delete is conditional on its uid and resourceVersion).
import { ReasonedError } from '../conditions.ts';
import type { Deletion, Client } from '../kube/client.ts';
import { isConflict } from '../kube/errors.ts';
import type { ManagedResource } from '../managed/types.ts';
import { describeRef, refKey, type NativeKind, type ObjectReader, type ObjectRef, type TargetObject } from './kind.ts';
import type { Owner, OwnershipMarks, Relation, Vouchers } from './ownership.ts';
import { Reasons } from '../reasons.ts';

/** Where a deletion reads and writes: `read` may be a cache (first look only), `client` is live. */
export interface TargetAccess {
  client: Client;
  read: ObjectReader;
  marks: OwnershipMarks;
}

/**
 * Deletes the object if it carries our marks, proven by the copy we checked: the delete is
 * conditional on its uid and resourceVersion, so a cached copy proves as much as a fresh read.
 * A conflict (it changed since) is checked once more against the server. `before` runs on the
 * copy just before its delete; the copy is returned even if a retry finds the object gone.
 */
export async function deleteIfOurs(
  { client, read, marks }: TargetAccess,
  ref: ObjectRef,
  owner: Owner,
  vouchers: Vouchers,
  signal: AbortSignal,
  before?: (observed: TargetObject) => Promise<void>,
): Promise<{ outcome: Deletion | 'notOurs'; observed?: TargetObject; relation?: Relation }> {
  let seen: TargetObject | undefined;
  for (let attempt = 0; ; attempt++) {
    const observed = await (attempt === 0 ? read : client).get<TargetObject>(ref.type, ref.name, ref.namespace, signal);
    if (!observed) return { outcome: 'absent', observed: seen };
    const relation = marks.relation(ref.type, observed, owner, vouchers);
    if (relation !== 'ours' && relation !== 'restored') return { outcome: 'notOurs' };
    seen = observed;
    await before?.(observed);
    try {
      const outcome = await client.delete(ref.type, ref.name, ref.namespace, {
        uid: observed.metadata.uid,
        resourceVersion: observed.metadata.resourceVersion,
        signal,
      });
      return { outcome, observed, relation };
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Not a stale copy of the managed resource (which the reconciler retries quietly): say so.
      if (attempt > 0)
        throw new ReasonedError(
          Reasons.TargetObjectChanging,
          `${describeRef(ref)} in the target cluster changed while it was being deleted; retrying`,
        );
    }
  }
}

/** Deletes what the operator made for `target` (proven by the ownerReference's uid). */
export async function deleteDependents(
  client: Client,
  kind: Pick<NativeKind<ManagedResource>, 'dependents'>,
  target: TargetObject,
  signal?: AbortSignal,
): Promise<void> {
  // All at once: the order among them does not matter, and a deletion's time is a chain of round trips.
  await Promise.all(
    (kind.dependents ?? []).map(async (dep) => {
      const { items } = await client.list<TargetObject>(dep.type, {
        namespace: target.metadata.namespace,
        labelSelector: dep.labelSelector(target),
        signal,
      });
      await Promise.all(
        items
          .filter((item) => !item.metadata.deletionTimestamp && item.metadata.ownerReferences?.some((r) => r.uid === target.metadata.uid))
          .map((item) => client.delete(dep.type, item.metadata.name, item.metadata.namespace, { uid: item.metadata.uid, signal })),
      );
    }),
  );
}

/**
 * Companions an earlier spec or key generation wanted (an old access Job, a finished retire Job):
 * ours, of the kind's `superseded` type and labels, in these namespaces, and not in `wanted`.
 * Deleted, so none piles up, keeps a namespace alive, or runs again with old keys.
 */
export async function deleteSuperseded(
  access: TargetAccess,
  kind: Pick<NativeKind<ManagedResource>, 'superseded'>,
  owner: Owner,
  vouchers: Vouchers,
  { wanted, namespaces }: { wanted: ObjectRef[]; namespaces: (string | undefined)[] },
  signal: AbortSignal,
): Promise<void> {
  const s = kind.superseded;
  if (!s) return;
  const keep = new Set(wanted.map(refKey));
  const live = { ...access, read: access.client };
  for (const namespace of new Set(namespaces.filter((n): n is string => Boolean(n)))) {
    const { items } = await access.client.list<TargetObject>(s.type, {
      namespace,
      labelSelector: `${access.marks.selectorFor(owner)},${s.labelSelector}`,
      signal,
    });
    for (const item of items) {
      const ref = { type: s.type, name: item.metadata.name, namespace };
      if (!keep.has(refKey(ref)) && !item.metadata.deletionTimestamp) await deleteIfOurs(live, ref, owner, vouchers, signal);
    }
  }
}
