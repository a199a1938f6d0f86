// What a backend is to the runtime: its API (a managed kind and its class), its NativeKind, and how
// its class configures a managed resource for a claim. Here, not beside the list in src/backends/index.ts,
// so a backend can name its own type without importing the list that imports it.
import type { Claim } from '../claims/claim.ts';
import type { KubeObjectLike } from '../../kit/kube/client.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import type { NativeKind } from '../native/kind.ts';
import type { Lookup } from '../claims/claim.ts';
import type { FeatureSupport } from '../claims/features.ts';
import type { Grantor } from '../claims/access.ts';

export interface Backend<MR extends ManagedResource = ManagedResource, C extends KubeObjectLike = KubeObjectLike> {
  managed: ResourceType;
  class: ResourceType;
  native: NativeKind<MR>;
  configure(claim: Claim, cls: C, name: string, lookup: Lookup): MR;
  /** Kinds of the control cluster configure() reads through its lookup (e.g. the store a class shares). */
  lookups?: ResourceType[];
  /** The bucket features it has, and where they go in its managed resource; unset, a claim asking for any is refused. */
  features?: FeatureSupport;
  /** What BucketAccess claims may share through it: for each kind that lends a bucket, how a grant of it is made. */
  grantors?: Grantor[];
}
