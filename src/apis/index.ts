// Every kind provider-rook serves; crds/ and src/apis/kinds.gen.ts are generated from this list: the
// Provider, the portable storage API, and each backend's managed kind and class (a unit test checks
// that every backend in src/backends.ts has its two kinds here).
import type { KindDefinition } from './crd.ts';
import { CephBucketClassKind, CephBucketKind } from './cephbucket.ts';
import { ObjectStoreKind } from './objectstore.ts';
import { ObjectStoreClassKind } from './objectstoreclass.ts';
import { ProviderKind } from './provider.ts';
import { BucketClassKind, BucketKind, BucketPolicyKind } from './storage.ts';
import { TenantClassKind, TenantKind } from './tenant.ts';

export const allKinds: KindDefinition[] = [
  ProviderKind, BucketClassKind, BucketPolicyKind, BucketKind,
  ObjectStoreKind, ObjectStoreClassKind, TenantKind, TenantClassKind, CephBucketKind, CephBucketClassKind,
];
