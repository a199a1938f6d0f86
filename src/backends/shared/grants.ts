// What every backend's access grant (a BucketAccess's managed resource) shares: a user of its own on
// a bucket another resource owns, placed where that bucket is, removed when the grant goes, with its
// owner's rotation settings; and the refusals of a resource that has no bucket to lend, or that would
// lend more than its own user may do.
import { ReasonedError } from '../../kit/conditions.ts';
import type { AccessMode } from '../../runtime/claims/sharing.ts';
import type { ManagedResource } from '../../runtime/managed/types.ts';
import { Reasons } from '../../runtime/reasons.ts';

const who = (mr: ManagedResource): string => `${mr.kind} ${mr.metadata.namespace}/${mr.metadata.name}`;

/** Why `bucket` lends nothing: it has no bucket of its own (or no Provider to reach it through yet). */
export const nothingToLend = (bucket: ManagedResource): ReasonedError =>
  new ReasonedError(Reasons.GrantsNotSupported, `${who(bucket)} has no bucket of its own (or no Provider yet) to share`);

/** Refuses to lend a bucket `bucket` does not own (a grant's user lends nothing; only the bucket's own resource does). */
export function refuseNotOwner(bucket: ManagedResource, ownsBucket: boolean | undefined): void {
  if (ownsBucket === false)
    throw new ReasonedError(Reasons.GrantsNotSupported, `${who(bucket)} does not own its bucket, so it has none to share`);
}

/**
 * Refuses a grant wider than the lent resource's own user (its bucket.access, or forProvider.access
 * for a bucket in a shared store): a platform team that gave a claim a ReadOnly user gave it no
 * way to write, through a grant of its own either.
 */
export function refuseWiderThanOwn(bucket: ManagedResource, mode: AccessMode): void {
  const spec = bucket.spec as { bucket?: { access?: AccessMode }; forProvider?: { access?: AccessMode } };
  const own = spec.bucket?.access ?? spec.forProvider?.access ?? 'ReadWrite';
  if (own !== 'ReadWrite' && own !== mode)
    throw new ReasonedError(Reasons.AccessNotAllowed, `${who(bucket)} has a ${own} user of its bucket: it lends ${own} only, not ${mode}`);
}

/** A grant's spec besides forProvider: where the bucket is, Delete (the grant's user goes; the bucket is its owner's), the owner's rotation. */
export function grantSpec(bucket: ManagedResource, where: { providerRef: { name: string }; namespace: string }, name: string) {
  return {
    providerRef: where.providerRef,
    targetNamespace: where.namespace,
    reclaimPolicy: 'Delete' as const,
    ...(bucket.spec.credentialRotation ? { credentialRotation: bucket.spec.credentialRotation } : {}),
    writeConnectionSecretToRef: { name },
  };
}
