// Every backend provider-rook serves. A backend is its API (a managed kind and its class), its
// NativeKind, and how its class configures a managed resource for a claim. Adding one is one line
// here (its kinds go in src/apis/index.ts); CRDs, RBAC and the kinds' names are generated (npm run gen).
import type { Claim } from './runtime/claims/claim.ts';
import type { KubeObjectLike } from './runtime/kube/client.ts';
import type { ResourceType } from './runtime/kube/resources.ts';
import type { ManagedResource } from './runtime/managed/types.ts';
import type { NativeKind } from './runtime/native/external.ts';
import { minioOperator } from './minio-operator/tenant.ts';
import { rookCeph } from './rook-ceph/bucket.ts';
import { rookMinio } from './rook-minio/objectstore.ts';

export interface Backend<MR extends ManagedResource = ManagedResource, C extends KubeObjectLike = KubeObjectLike> {
  managed: ResourceType;
  class: ResourceType;
  native: NativeKind<MR>;
  configure(claim: Claim, cls: C, name: string): MR;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each backend has its own managed and class types
export const backends: Backend<any, any>[] = [rookMinio, minioOperator, rookCeph];
