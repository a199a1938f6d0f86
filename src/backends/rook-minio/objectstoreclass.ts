// How a Bucket claim becomes a managed ObjectStore: the ObjectStoreClass supplies everything; the
// generic claim reconciler supplies the name, the namespace, the Provider (or its selector) and the
// claim/class references.
import type { ObjectStore, ObjectStoreClass } from './api.ts';
import { claimLabels, refuseUnlessAllowed, type Claim } from '../../runtime/claims/claim.ts';
import { kinds } from '../../apis/kinds.gen.ts';
import { withoutNulls } from '../../kit/json.ts';
import { bucketNameFor } from '../shared/s3-names.ts';

/**
 * A store's namespace in the target: its own, unless the class names one for all its stores. The
 * Rook MinIO operator writes a store's root keys into its StatefulSet as literal environment values,
 * so whoever may read pods in a namespace reads the root keys of every store there.
 */
function targetNamespaceOf(cls: ObjectStoreClass, name: string): string {
  const { targetNamespace, namespacePrefix = 'rook-minio-' } = cls.spec;
  return targetNamespace ?? `${namespacePrefix}${name}`.slice(0, 63).replace(/-+$/, '');
}

export function configureObjectStore(claim: Claim, cls: ObjectStoreClass, name: string): ObjectStore {
  const { scope, annotations, placement, clusterDomain, reclaimPolicy, credentialRotation, exposure } = cls.spec;
  refuseUnlessAllowed({ ...cls, kind: 'ObjectStoreClass' }, claim);
  const namespace = targetNamespaceOf(cls, name);
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: kinds.ObjectStore.kind,
    metadata: {
      name,
      labels: claimLabels(claim),
    },
    spec: {
      forProvider: withoutNulls({
        scope,
        annotations,
        placement: placement && Object.keys(withoutNulls(placement)).length > 0 ? placement : undefined,
        clusterDomain,
        // Each new store gets its own keys, so two claims on one class never share credentials.
        credentials: { name: `${name}-access-keys`, namespace },
      }) as ObjectStore['spec']['forProvider'],
      targetNamespace: namespace,
      // The claim gets a bucket of the store and a user of its own, never the store's root keys.
      bucket: { name: bucketNameFor(claim), access: 'ReadWrite' },
      ...(credentialRotation ? { credentialRotation } : {}),
      ...(exposure ? { exposure } : {}),
      reclaimPolicy,
      writeConnectionSecretToRef: { name },
    },
  };
}
