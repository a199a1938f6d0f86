// Every kind provider-rook serves; crds/ is generated from this list.
import type { KindDefinition } from './crd.ts';
import { ObjectStoreKind } from './objectstore.ts';
import { ObjectStoreClassKind } from './objectstoreclass.ts';
import { ProviderKind } from './provider.ts';
import { BucketClassKind, BucketKind, BucketPolicyKind } from './storage.ts';
import { TenantClassKind, TenantKind } from './tenant.ts';
import { CephBucketClassKind, CephBucketKind } from './cephbucket.ts';

export const allKinds: KindDefinition[] = [
  ProviderKind, BucketClassKind, BucketPolicyKind, BucketKind,
  ObjectStoreKind, ObjectStoreClassKind, TenantKind, TenantClassKind, CephBucketKind, CephBucketClassKind,
];
