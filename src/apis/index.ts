// Every kind provider-rook serves; crds/ is generated from this list: the Provider, the portable
// storage API, and each backend's managed kind and class.
import { backends } from '../backends.ts';
import type { KindDefinition } from './crd.ts';
import { ProviderKind } from './provider.ts';
import { BucketClassKind, BucketKind, BucketPolicyKind } from './storage.ts';

export const allKinds: KindDefinition[] = [ProviderKind, BucketClassKind, BucketPolicyKind, BucketKind, ...backends.flatMap((b) => [b.managed, b.class])];
