// Every kind provider-rook serves; crds/ is generated from this list.
import type { KindDefinition } from './crd.ts';
import { ObjectStoreKind } from './objectstore.ts';
import { ObjectStoreClassKind } from './objectstoreclass.ts';
import { ProviderKind } from './provider.ts';
import { BucketClassKind, BucketKind, BucketPolicyKind } from './storage.ts';

export const allKinds: KindDefinition[] = [ProviderKind, ObjectStoreKind, ObjectStoreClassKind, BucketClassKind, BucketPolicyKind, BucketKind];
