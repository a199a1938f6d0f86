// Every backend provider-rook serves (what one is: src/runtime/system/backend.ts). Adding one is a
// folder beside these, with its API in an api.ts of its own (src/kinds.ts finds it), and its place
// in the list here; CRDs, RBAC and the kinds' names are generated from them (npm run gen), and what
// BucketAccess may share comes with each backend (Backend.grantors). The one wiring between
// backends: a kind of MinIO store says how buckets of the MinIO bucket backend reach it.
import type { Backend } from '../runtime/system/backend.ts';
import { minioBuckets, type MinioStores } from './minio-bucket/bucket.ts';
import type { Grantor } from '../runtime/claims/access.ts';
import type { Tenant } from './minio-operator/api.ts';
import { minioOperator, tenantAccess } from './minio-operator/tenant.ts';
import { rookCeph } from './rook-ceph/bucket.ts';
import type { ObjectStore } from './rook-minio/api.ts';
import { objectStoreAccess, rookMinio } from './rook-minio/objectstore.ts';
import { seaweedBuckets } from './seaweedfs/bucket.ts';
import { seaweedStores } from './seaweedfs/store.ts';

/** How buckets of a shared MinIO store reach it, by the kind of store: given by the backends that keep them. */
const minioStores: MinioStores = {
  ObjectStore: (store) => objectStoreAccess(store as ObjectStore),
  Tenant: (store) => tenantAccess(store as Tenant),
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each backend has its own managed and class types
export const backends: Backend<any, any>[] = [seaweedStores, seaweedBuckets, rookMinio, minioOperator, rookCeph, minioBuckets(minioStores)];

/** The backends whose buckets BucketAccess claims can share (src/runtime/claims/access.ts). */
export const grantors: Grantor[] = backends.flatMap((b) => b.grantors ?? []);
