// provider-rook: the kinds it serves, registered on the generic runtime. Each backend is a managed
// kind (its API in src/apis, its NativeKind beside it) and a class binding for the Bucket claim.
import { resourceTypeOf } from './apis/crd.ts';
import { ObjectStoreKind, type ObjectStore } from './apis/objectstore.ts';
import { ObjectStoreClassKind } from './apis/objectstoreclass.ts';
import { BucketClassKind, BucketKind, BucketPolicyKind } from './apis/storage.ts';
import { CephBucketClassKind, CephBucketKind, type CephBucket } from './apis/cephbucket.ts';
import { TenantClassKind, TenantKind, type Tenant } from './apis/tenant.ts';
import { configureTenant, minioTenant } from './minio-operator/tenant.ts';
import { cephBucket, configureCephBucket } from './rook-ceph/bucket.ts';
import { minioObjectStore } from './rook-minio/objectstore.ts';
import { configureObjectStore } from './rook-minio/objectstoreclass.ts';
import type { KubeClient } from './runtime/kube/client.ts';
import { Manager, type ManagerOptions } from './runtime/manager.ts';
import type { LeakReport } from './runtime/native/leaks.ts';
import type { TargetClients } from './runtime/native/targets.ts';
import { setupClaim, setupNativeManaged } from './runtime/setup.ts';

export const FIELD_MANAGER = 'provider-rook';

export const ManagedObjectStores = resourceTypeOf(ObjectStoreKind);
export const ObjectStoreClasses = resourceTypeOf(ObjectStoreClassKind);
export const BucketClasses = resourceTypeOf(BucketClassKind);
export const BucketPolicies = resourceTypeOf(BucketPolicyKind);
export const Buckets = resourceTypeOf(BucketKind);
export const Tenants = resourceTypeOf(TenantKind);
export const TenantClasses = resourceTypeOf(TenantClassKind);
export const CephBuckets = resourceTypeOf(CephBucketKind);
export const CephBucketClasses = resourceTypeOf(CephBucketClassKind);

export type AppOptions = Omit<ManagerOptions, 'fieldManager'>;

export interface App {
  controlPlaneId: string;
  leaks: { sweep(signal?: AbortSignal, now?: number): Promise<LeakReport[]> };
  targets: TargetClients;
  control: KubeClient;
  stop(): Promise<void>;
}

export async function startApp(opts: AppOptions): Promise<App> {
  const manager = await Manager.create({ ...opts, fieldManager: FIELD_MANAGER });

  setupNativeManaged<ObjectStore>(manager, { type: ManagedObjectStores, kind: minioObjectStore });
  setupNativeManaged<Tenant>(manager, { type: Tenants, kind: minioTenant });
  setupNativeManaged<CephBucket>(manager, { type: CephBuckets, kind: cephBucket });

  setupClaim(manager, {
    claim: Buckets, portableClass: BucketClasses, policy: BucketPolicies,
    classes: [
      { class: ObjectStoreClasses, managed: ManagedObjectStores, configure: configureObjectStore },
      { class: TenantClasses, managed: Tenants, configure: configureTenant },
      { class: CephBucketClasses, managed: CephBuckets, configure: configureCephBucket },
    ],
  });

  await manager.start();
  return {
    controlPlaneId: manager.controlPlaneId,
    leaks: { sweep: (signal, now) => manager.sweepLeaks(signal, now) },
    targets: manager.targets,
    control: manager.control,
    stop: () => manager.stop(),
  };
}
