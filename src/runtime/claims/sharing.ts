// What a Bucket shares, and with whom: its spec.shareWith lists namespaces and the modes each may
// use. The rules an access's grant, the Bucket's grant mark and delivery all ask, in one place.
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import { isDeleting } from '../../kit/meta.ts';
import { Reasons } from '../reasons.ts';
import type { Claim } from './claim.ts';

export type AccessMode = 'ReadWrite' | 'ReadOnly' | 'WriteOnly';

/** A BucketAccess claim, as the access reconciler reads it. */
export interface AccessClaim extends Claim {
  spec?: Claim['spec'] & { bucketRef?: { namespace: string; name: string }; mode?: AccessMode };
}

/** A Bucket claim's allow-list. */
export type Sharing = { namespace: string; modes?: AccessMode[] }[];

/**
 * Whether the access holds a grant of the bucket: it names this bucket, it recorded a grant
 * (resourceRef, which is the app team's to write, so not proof alone), and the bucket shares with
 * its namespace in its mode.
 */
export function grantHeld(
  bucket: ReadonlyDeep<Claim & { spec?: { shareWith?: Sharing } }> | undefined,
  access: ReadonlyDeep<AccessClaim>,
): boolean {
  const ref = access.spec?.bucketRef;
  if (!bucket || !ref || ref.namespace !== bucket.metadata.namespace || ref.name !== bucket.metadata.name) return false;
  return Boolean(access.spec?.resourceRef && access.spec.mode) && !refusal(bucket, access, access.spec!.mode!);
}

/** Why this access may not reach the bucket, if it may not: the Bucket is gone, or does not share with this namespace and mode. */
export function refusal(
  bucket: ReadonlyDeep<Claim & { spec?: { shareWith?: Sharing } }> | undefined,
  access: ReadonlyDeep<AccessClaim>,
  mode: AccessMode,
): ReasonedError | undefined {
  const ref = access.spec!.bucketRef!;
  const where = `Bucket ${ref.namespace}/${ref.name}`;
  // Missing or not shared, the answer names only what this namespace asked: nothing of buckets not shared with it.
  if (!bucket || isDeleting(bucket.metadata)) {
    return new ReasonedError(
      Reasons.AccessNotAllowed,
      `${where} does not exist or does not share with namespace ${access.metadata.namespace}`,
    );
  }
  const entry = bucket.spec?.shareWith?.find((s) => s.namespace === access.metadata.namespace);
  if (!entry)
    return new ReasonedError(
      Reasons.AccessNotAllowed,
      `${where} does not exist or does not share with namespace ${access.metadata.namespace}`,
    );
  const modes = entry.modes ?? ['ReadOnly'];
  if (!modes.includes(mode)) {
    return new ReasonedError(
      Reasons.AccessNotAllowed,
      `${where} shares with namespace ${access.metadata.namespace} in mode ${modes.join(', ')} only, not ${mode}`,
    );
  }
  return undefined;
}
