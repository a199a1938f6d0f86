// Deleting what a managed resource owns in a target: only what its marks prove ours, and only the
// very copy that was checked (the delete is conditional on its uid and resourceVersion), in an order
// that a crash at any point leaves nothing behind that the next pass would not find.
import { ReasonedError } from '../../kit/conditions.ts';
import type { Deletion, Client, KubeClient } from '../../kit/kube/client.ts';
import { isConflict } from '../../kit/kube/errors.ts';
import type { ManagedResource } from '../managed/types.ts';
import { describeRef, refKey, type Companion, type NativeKind, type ObjectReader, type ObjectRef, type TargetObject } from './kind.ts';
import { deleteNamespaceIfUnusedCoalesced } from './namespaces.ts';
import type { Owner, OwnershipMarks, Relation, Vouchers } from '../ownership/marks.ts';
import { Reasons } from '../reasons.ts';

/** The finalizers of a deletion's propagation policy: our background DELETE replaces them. */
const PROPAGATION = new Set(['orphan', 'foregroundDeletion']);

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
): Promise<{ outcome: Deletion | 'notOurs'; observed?: TargetObject; relation?: Relation; alreadyDeleting?: boolean }> {
  let seen: TargetObject | undefined;
  for (let attempt = 0; ; attempt++) {
    const observed = await (attempt === 0 ? read : client).get<TargetObject>(ref.type, ref.name, ref.namespace, signal);
    if (!observed) return { outcome: 'absent', observed: seen };
    const relation = marks.relation(ref.type, observed, owner, vouchers);
    if (relation !== 'ours' && relation !== 'restored') return { outcome: 'notOurs' };
    // Held by others' finalizers: a DELETE again would change nothing but cost a write. Only a fresh
    // copy says so (a cached one may be of an object since replaced); one held for its dependents'
    // sake (orphan, foreground) is asked again, in the background, as before.
    const held = observed.metadata.deletionTimestamp && !observed.metadata.finalizers?.some((f) => PROPAGATION.has(f));
    if (held && attempt === 0 && read !== client) continue;
    seen = observed;
    await before?.(observed);
    if (held) return { outcome: 'pending', observed, relation, alreadyDeleting: true };
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

/**
 * Whether a deleting resource whose object is gone may still have something of ours in the target,
 * so that its deletion runs once more (it then finds the object absent, deletes what is left, and
 * lets go): what the operator made, found by the recorded uid; our companions, a teardown's Job or
 * older Jobs. A pass cut off after the object, or an object someone else deleted, leaves them behind
 * otherwise. (A status cannot tell that a pass got past them: a running teardown writes the same.)
 */
export function mayHaveLeftovers(
  kind: Pick<NativeKind<ManagedResource>, 'dependents' | 'companions' | 'teardown' | 'superseded'>,
  recordedUid: string | undefined,
): boolean {
  return Boolean((kind.dependents && recordedUid) || kind.companions || kind.teardown || kind.superseded);
}

/**
 * Deletes a resource's object in the target, what its operator made for it, its companions, and
 * its namespace once nothing else is there. Says whether the object is gone, and why a namespace
 * of ours was kept.
 */
export async function deleteOwned(
  access: TargetAccess & { client: KubeClient },
  kind: Pick<NativeKind<ManagedResource>, 'target' | 'dependents' | 'superseded'>,
  what: { name: string; namespace?: string; owner: Owner; vouchers: Vouchers; companions: Companion[] },
  signal: AbortSignal,
): Promise<{ gone: boolean; requested: boolean; keptNamespace?: { why: string; byStores: boolean } }> {
  const { client } = access;
  const { name, namespace, owner, vouchers, companions } = what;
  // What the operator made for the object is found by its uid. With the uid recorded, the object goes
  // first and they go after it, once: should this pass fail in between, the next one finds them by
  // the recorded uid. Without it, they go before the object too, or nothing would find them later.
  const recorded = kind.dependents && vouchers.recordedUid;
  const target = await deleteIfOurs(access, { type: kind.target, name, namespace }, owner, vouchers, signal, (observed) =>
    recorded ? Promise.resolve() : deleteDependents(client, kind, observed, signal),
  );
  // After the object, side by side (their order does not matter; a deletion's time is a chain of
  // round trips): what the operator made, which it may have made in the meantime; our companions;
  // older companions of the superseded type (an access Job of keys or a bucket the resource no
  // longer has), in every namespace a companion lives in.
  const madeFor =
    target.observed ??
    (recorded && target.outcome === 'absent'
      ? { apiVersion: kind.target.apiVersion, kind: kind.target.kind, metadata: { name, namespace, uid: recorded } }
      : undefined);
  const companionVouchers = { ...vouchers, recordedUid: undefined, restoring: target.relation === 'restored' };
  const namespaces = companions.map((c) => c.namespace);
  await Promise.all([
    madeFor && deleteDependents(client, kind, madeFor, signal),
    ...companions.map((c) => deleteIfOurs(access, c, owner, companionVouchers, signal)),
    deleteSuperseded(access, kind, owner, companionVouchers, { wanted: [], namespaces }, signal),
  ]);
  const keptNamespace = namespace
    ? await deleteNamespaceIfUnusedCoalesced(client, access.marks, namespace, kind.target, signal)
    : undefined;
  // Asked now: not absent (gone already, or deleted by someone else), nor held since an earlier pass.
  const requested = (target.outcome === 'deleted' || target.outcome === 'pending') && !target.alreadyDeleting;
  return { gone: target.outcome !== 'pending', requested, keptNamespace };
}
