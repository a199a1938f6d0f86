// Every kind provider-rook serves; crds/ is generated from this list.
import type { KindDefinition } from './crd.ts';
import { ObjectStoreKind } from './objectstore.ts';
import { ProviderKind } from './provider.ts';

export const allKinds: KindDefinition[] = [ProviderKind, ObjectStoreKind];
