// Rook MinIO's API (minio.rook.crossplane.io/v1alpha1): the managed ObjectStore, one minio.rook.io
// ObjectStore in a target cluster; and ObjectStoreClass, its class of service.
import { z } from 'zod';
import {
  allowedNamespaces,
  ageColumn,
  classPlacement,
  credentialRotation,
  managedSpec,
  managedStatus,
  namespaceName,
  objectName,
  persistentVolumeClaimSpec,
  policiesColumn,
  protectClaims,
  reclaimPolicy,
  rotatedColumn,
  protectedColumn,
  readyColumns,
  storeBucketWith,
  storeBucketKept,
  type KubeObject,
  namespacePrefix,
  clusterDomainName,
} from '../../apis/common.ts';
import type { KindDefinition } from '../../apis/crd.ts';
import { classExposure, exposureStatus, storeExposure } from '../../apis/delivery.ts';
import { featurePolicy, objectLockFixedRule } from '../../apis/features.ts';

const volumeClaimTemplate = z.object({
  metadata: z
    .object({
      name: namespaceName().meta({ description: 'Volume name; MinIO mounts it at /data/<name>.' }),
      labels: z.record(z.string(), z.string()).optional().meta({ description: "Labels for the volume's PersistentVolumeClaims." }),
      annotations: z
        .record(z.string(), z.string())
        .optional()
        .meta({ description: "Annotations for the volume's PersistentVolumeClaims." }),
    })
    .meta({ description: "The volume's name, labels and annotations." }),
  spec: persistentVolumeClaimSpec,
});

/** The spec of a minio.rook.io/v1alpha1 ObjectStore, as the Rook MinIO operator reads it. */
const minioStoreSpec = z.object({
  scope: z
    .object({
      nodeCount: z
        .int()
        .min(4)
        .max(32)
        .meta({ description: 'Number of MinIO servers (StatefulSet replicas): 4 to 32, even (what MinIO of this generation runs).' }),
      volumeClaimTemplates: z.array(volumeClaimTemplate).max(16).optional().meta({
        description: 'Volumes for every server; none means an emptyDir at /data/minio-data.',
      }),
    })
    .meta({
      description: 'Storage scope of the store.',
      'x-kubernetes-validations': [
        {
          rule: 'self.nodeCount >= 4 && self.nodeCount % 2 == 0',
          message: 'scope.nodeCount must be at least 4 and even (the Rook MinIO operator ignores any other value)',
        },
      ],
    }),
  // Nullable: Rook's sample (and config/samples/02-objectstoreclass.yaml) write "annotations:" with every entry commented out.
  annotations: z.record(z.string(), z.string()).nullable().optional().meta({ description: 'Annotations for the MinIO pods.' }),
  placement: z.record(z.string(), z.unknown()).optional().meta({
    description:
      'Rook placement (nodeAffinity, podAffinity, podAntiAffinity, tolerations) by key, e.g. "all". Passed through; the operator does not act on it.',
  }),
  credentials: z
    .object({
      name: objectName().meta({ description: 'Secret with the MinIO access keys (keys username and password).' }),
      namespace: namespaceName().optional().meta({ description: "Its namespace in the target; defaults to the store's namespace." }),
    })
    .optional()
    .meta({
      description:
        'The access-keys Secret in the target. Created with strong random keys when missing; never overwritten. Defaults to <store>-access-keys.',
    }),
  clusterDomain: clusterDomainName.optional().meta({ description: 'Cluster DNS domain of the target (default cluster.local).' }),
});

// The Rook MinIO operator reads a store's spec only when it creates the store (it never updates its
// StatefulSet), so an edit would report Synced=True without reaching MinIO: the API refuses it.
const APPLIED_AT_CREATION = 'the Rook MinIO operator applies it only when it creates the store; make a new store instead';
const unchanged = (field: string) => ({
  rule: `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
  message: `forProvider.${field} cannot change after creation: ${APPLIED_AT_CREATION}`,
});

export const objectStoreSchema = z.object({
  spec: managedSpec(
    minioStoreSpec.meta({
      description:
        'The minio.rook.io ObjectStore spec to keep in the target cluster. Fixed at creation (credentials may be filled in once).',
      'x-kubernetes-validations': [
        unchanged('scope'),
        unchanged('annotations'),
        unchanged('placement'),
        unchanged('clusterDomain'),
        {
          rule: '!has(oldSelf.credentials) || (has(self.credentials) && self.credentials == oldSelf.credentials)',
          message: 'forProvider.credentials can be set once and then not changed: the store keeps the keys it was made with',
        },
      ],
    }),
    'store',
    { bucket: storeBucketWith([objectLockFixedRule]).optional(), exposure: storeExposure.optional() },
    [storeBucketKept],
  ),
  status: managedStatus(
    z.object({
      namespace: z.string().optional().meta({ description: 'Namespace of the minio.rook.io ObjectStore in the target cluster.' }),
      name: z.string().optional().meta({ description: 'Name of the minio.rook.io ObjectStore in the target cluster.' }),
      endpoint: z.string().optional().meta({ description: 'In-cluster S3 endpoint of the store.' }),
      readyReplicas: z.int().optional().meta({ description: "Ready MinIO servers, from the operator's StatefulSet." }),
      exposure: exposureStatus,
    }),
  ),
});

export type ObjectStore = KubeObject & z.infer<typeof objectStoreSchema>;

export const ObjectStoreKind: KindDefinition = {
  group: 'minio.rook.crossplane.io',
  version: 'v1alpha1',
  kind: 'ObjectStore',
  plural: 'objectstores',
  shortNames: ['ros'],
  categories: ['crossplane', 'managed', 'minio', 'rook'],
  scope: 'Namespaced',
  description: 'A Rook MinIO object store (minio.rook.io ObjectStore) that provider-rook keeps in a target cluster.',
  schema: objectStoreSchema,
  printerColumns: [
    ...readyColumns,
    { name: 'EXTERNAL-NAME', type: 'string', jsonPath: '.metadata.annotations.crossplane\\.io/external-name' },
    { name: 'TARGET-NAMESPACE', type: 'string', jsonPath: '.spec.targetNamespace', priority: 1 },
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    protectedColumn,
    rotatedColumn,
    policiesColumn,
    ageColumn,
  ],
};

// ObjectStoreClass (minio.rook.crossplane.io/v1alpha1): a non-portable class of service. A platform
// team writes the store's spec once; every Bucket claim that resolves to this class gets a managed
// ObjectStore configured from it.
export const objectStoreClassSchema = z.object({
  spec: minioStoreSpec
    .extend({
      credentials: z
        .object({
          name: objectName().meta({
            description:
              'Not used as is: every provisioned store gets its own keys in <store>-access-keys, so two claims never share keys.',
          }),
          namespace: namespaceName().optional().meta({
            description:
              'Not used: each store keeps its root keys in its own target namespace, beside its StatefulSet, so that no namespace holds the root keys of stores that do not live there.',
          }),
        })
        .optional()
        .meta({
          description:
            "Not used; accepted so the design's sample applies. Every store gets its own keys, <store>-access-keys in its own namespace.",
        }),
      ...classPlacement.fields,
      exposure: classExposure.optional(),
      protectClaims,
      features: featurePolicy.optional(),
      credentialRotation: credentialRotation.optional(),
      reclaimPolicy: reclaimPolicy.default('Delete').meta({
        description:
          'What happens when a claim on a store of this class is deleted: Delete removes the managed resource and the target store; Retain keeps both (Released).',
      }),
      targetNamespace: namespaceName().optional().meta({
        description:
          "One namespace in the target cluster for every store of the class. Whoever may read pods there reads every store's root keys, which the operator writes into each StatefulSet. Unset, each store gets a namespace of its own, <namespacePrefix><managed resource name>.",
      }),
      namespacePrefix: namespacePrefix(
        'rook-minio-',
        'Each store gets its own target namespace, <prefix><managed resource name>, unless targetNamespace names a shared one.',
      ),
      allowedNamespaces: allowedNamespaces(),
    })
    .meta({
      description: "What each claim of this class gets: a Rook MinIO ObjectStore of this spec, in the chosen Provider's cluster.",
      'x-kubernetes-validations': [classPlacement.rule],
    }),
});

export type ObjectStoreClass = KubeObject & z.infer<typeof objectStoreClassSchema>;

export const ObjectStoreClassKind: KindDefinition = {
  group: 'minio.rook.crossplane.io',
  version: 'v1alpha1',
  kind: 'ObjectStoreClass',
  plural: 'objectstoreclasses',
  shortNames: ['rosclass'],
  categories: ['crossplane', 'class', 'minio', 'rook'],
  scope: 'Namespaced',
  description:
    'A non-portable class of Rook MinIO object stores: the store spec, the target (providerRef, or providerSelector for the scheduler) and the reclaim policy for claims.',
  schema: objectStoreClassSchema,
  statusSubresource: false,
  printerColumns: [
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    { name: 'PROVIDER-SELECTOR', type: 'string', jsonPath: '.spec.providerSelector.matchLabels' },
    { name: 'NODES', type: 'integer', jsonPath: '.spec.scope.nodeCount' },
    { name: 'RECLAIM-POLICY', type: 'string', jsonPath: '.spec.reclaimPolicy' },
    ageColumn,
  ],
};
