// A store a class shares, as a bucket in it needs it now: there, not being deleted, managed (not only
// observed), and Ready with what a bucket needs of it. Every backend of buckets in a shared store asks
// the same, and answers a claim in the same words.
import { ReasonedError, getCondition } from '../../kit/conditions.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Lookup } from '../../runtime/claims/claim.ts';
import { policyOf } from '../../runtime/managed/policies.ts';
import type { ManagedResource } from '../../runtime/managed/types.ts';
import { Reasons } from '../../runtime/reasons.ts';

/**
 * The access `accessOf` reads off the shared store `type` `namespace/name`, once it is Ready;
 * `who` names the class in the claim's condition. `observed` says why an only-observed store is no use.
 */
export function readyStore<S extends ManagedResource, A>(
  lookup: Lookup,
  store: { type: ResourceType; namespace: string; name: string },
  who: string,
  accessOf: (store: S) => A | undefined,
  observed = 'no bucket is made in it',
): { store: S; access: A } {
  const found = lookup.get<S>(store.type, { namespace: store.namespace, name: store.name });
  const where = `${store.type.kind} ${store.namespace}/${store.name}`;
  if (!found || found.metadata.deletionTimestamp) {
    throw new ReasonedError(
      Reasons.SharedStoreNotFound,
      `${who} shares ${where}, which does not exist${found ? ' any more (it is being deleted)' : ''}`,
    );
  }
  if (policyOf(found.spec as { managementPolicies?: string[] }).onlyObserve) {
    throw new ReasonedError(
      Reasons.SharedStoreNotReady,
      `${who} shares ${where}, which provider-rook only observes (managementPolicies ["Observe"]): ${observed}`,
    );
  }
  const ready = getCondition(found.status?.conditions, 'Ready');
  const access = accessOf(found);
  if (ready?.status !== 'True' || access === undefined) {
    throw new ReasonedError(
      Reasons.SharedStoreNotReady,
      `${who} shares ${where}, which is not Ready${ready?.message ? `: ${ready.message}` : ''}; the bucket is made once it is`,
    );
  }
  return { store: found, access };
}
