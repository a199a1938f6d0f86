// Managed ObjectStore (minio.rook.crossplane.io/v1alpha1): one minio.rook.io ObjectStore in a target cluster.
import { z } from 'zod';
import {
  ageColumn, bindingPhase, conditions, objectRef, providerRef, readyColumns, reclaimPolicy, writeConnectionSecretToRef, type KubeObject,
} from './common.ts';
import type { KindDefinition } from './crd.ts';

const volumeClaimTemplate = z.object({
  metadata: z.object({
    name: z.string().min(1).meta({ description: 'Volume name; MinIO mounts it at /data/<name>.' }),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.record(z.string(), z.unknown()).meta({ description: 'A PersistentVolumeClaim spec.' }),
});

/** The spec of a minio.rook.io/v1alpha1 ObjectStore, as the Rook MinIO operator reads it. */
export const minioStoreSpec = z.object({
  scope: z.object({
    nodeCount: z.int().meta({ description: 'Number of MinIO servers (StatefulSet replicas): at least 4 and even.' }),
    volumeClaimTemplates: z.array(volumeClaimTemplate).optional().meta({
      description: 'Volumes for every server; none means an emptyDir at /data/minio-data.',
    }),
  }).meta({
    description: 'Storage scope of the store.',
    'x-kubernetes-validations': [{
      rule: 'self.nodeCount >= 4 && self.nodeCount % 2 == 0',
      message: 'scope.nodeCount must be at least 4 and even (the Rook MinIO operator ignores any other value)',
    }],
  }),
  // Nullable: Rook's sample (and the design doc) write "annotations:" with every entry commented out.
  annotations: z.record(z.string(), z.string()).nullable().optional().meta({ description: 'Annotations for the MinIO pods.' }),
  placement: z.record(z.string(), z.unknown()).optional().meta({
    description: 'Rook placement (nodeAffinity, podAffinity, podAntiAffinity, tolerations) by key, e.g. "all". Passed through; the operator does not act on it.',
  }),
  credentials: z.object({
    name: z.string().min(1).meta({ description: 'Secret with the MinIO access keys (keys username and password).' }),
    namespace: z.string().optional().meta({ description: 'Its namespace in the target; defaults to the store\'s namespace.' }),
  }).optional().meta({ description: 'The access-keys Secret in the target. Created with strong random keys when missing; never overwritten. Defaults to <store>-access-keys.' }),
  clusterDomain: z.string().optional().meta({ description: 'Cluster DNS domain of the target (default cluster.local).' }),
});
export type MinioStoreSpec = z.infer<typeof minioStoreSpec>;

export const objectStoreSchema = z.object({
  spec: z.object({
    forProvider: minioStoreSpec.meta({ description: 'The minio.rook.io ObjectStore spec to keep in the target cluster.' }),
    targetNamespace: z.string().min(1).meta({ description: 'Namespace of the store in the target cluster; created when missing.' }),
    providerRef,
    reclaimPolicy: reclaimPolicy.default('Delete'),
    writeConnectionSecretToRef: writeConnectionSecretToRef.optional(),
    claimRef: objectRef.optional().meta({ description: 'The claim bound to this resource, if any.' }),
    classRef: objectRef.optional().meta({ description: 'The class this resource was provisioned from, if any.' }),
  }),
  status: z.object({
    conditions,
    bindingPhase,
    atProvider: z.object({
      namespace: z.string().optional(),
      name: z.string().optional(),
      endpoint: z.string().optional().meta({ description: 'In-cluster S3 endpoint of the store.' }),
      readyReplicas: z.int().optional().meta({ description: 'Ready MinIO servers, from the operator\'s StatefulSet.' }),
    }).optional().meta({ description: 'What was last observed in the target cluster.' }),
  }).optional(),
});

export type ObjectStore = KubeObject & z.infer<typeof objectStoreSchema>;

export const ObjectStoreKind: KindDefinition = {
  group: 'minio.rook.crossplane.io',
  version: 'v1alpha1',
  kind: 'ObjectStore',
  plural: 'objectstores',
  categories: ['crossplane', 'managed', 'minio'],
  scope: 'Namespaced',
  description: 'A Rook MinIO object store (minio.rook.io ObjectStore) that provider-rook keeps in a target cluster.',
  schema: objectStoreSchema,
  printerColumns: [
    ...readyColumns,
    { name: 'EXTERNAL-NAME', type: 'string', jsonPath: ".metadata.annotations.crossplane\\.io/external-name" },
    { name: 'TARGET-NAMESPACE', type: 'string', jsonPath: '.spec.targetNamespace', priority: 1 },
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name', priority: 1 },
    ageColumn,
  ],
};
