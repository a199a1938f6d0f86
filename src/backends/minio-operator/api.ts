// MinIO Operator backend (minio.crossplane.io/v1alpha1): a managed Tenant (one minio.min.io/v2
// Tenant in a target cluster, in a namespace of its own) and the TenantClass it is made from.
import { z } from 'zod';
import {
  allowedNamespaces,
  protectClaims,
  credentialRotation,
  rotatedColumn,
  ageColumn,
  managedSpec,
  managedStatus,
  classPlacement,
  persistentVolumeClaimSpec,
  policiesColumn,
  protectedColumn,
  readyColumns,
  storeBucketWith,
  storeBucketKept,
  reclaimPolicy,
  type KubeObject,
  namespacePrefix,
  CLUSTER_DOMAIN,
} from '../../apis/common.ts';
import type { KindDefinition } from '../../apis/crd.ts';
import { classExposure, exposureStatus, storeExposure } from '../../apis/delivery.ts';
import { featurePolicy, objectLockFixedRule } from '../../apis/features.ts';

const GROUP = 'minio.crossplane.io';
const VERSION = 'v1alpha1';

const pool = z
  .object({
    name: z
      .string()
      .min(1)
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .meta({ description: 'Pool name; its StatefulSet is <tenant>-<name>.' }),
    servers: z.int().min(1).max(1000).meta({ description: 'MinIO servers (pods) in the pool.' }),
    volumesPerServer: z.int().min(1).max(100).meta({ description: 'Volumes per server.' }),
    volumeClaimTemplate: z
      .object({
        metadata: z
          .object({
            name: z
              .string()
              .optional()
              .meta({ description: "The volumes' name, which the MinIO Operator numbers per volume; its default when unset." }),
            labels: z.record(z.string(), z.string()).optional().meta({ description: "Labels for the volumes' PersistentVolumeClaims." }),
          })
          .optional()
          .meta({ description: "The volumes' name and labels." }),
        spec: persistentVolumeClaimSpec,
      })
      .meta({ description: 'The PersistentVolumeClaim every volume of the pool is made from.' }),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: 'self.servers * self.volumesPerServer >= 4 || (self.servers == 1 && self.volumesPerServer == 1)',
        message:
          'a pool needs at least 4 volumes in all (servers x volumesPerServer), or exactly one server with one volume (the MinIO Operator refuses anything else)',
      },
    ],
  });

/** The minio.min.io Tenant spec provider-rook writes (the root credentials are its own). */
export const tenantSpec = z.object({
  pools: z
    .array(pool)
    .min(1)
    .max(16)
    .meta({
      description: 'The server pools (1 to 16), each a StatefulSet of MinIO servers with volumes of their own. Named uniquely.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    }),
  image: z.string().optional().meta({ description: "MinIO image (default: the operator's)." }),
  requestAutoCert: z
    .boolean()
    .default(false)
    .meta({ description: "TLS through the cluster's CSR signer. Off by default: the endpoint is then http on port 80." }),
  // Empty is the default, as a Tenant could say before the domain was checked.
  clusterDomain: z
    .string()
    .max(253)
    .regex(new RegExp(`^$|${CLUSTER_DOMAIN.source}`))
    .optional()
    .meta({ description: 'Cluster DNS domain of the target (default cluster.local, also when empty).' }),
});

/**
 * An exposed Tenant serves plain HTTP: the certificate the cluster's signer issues for
 * requestAutoCert names only the Tenant's cluster-internal host names, which a client in another
 * cluster does not use, and a Gateway route cannot carry TLS to its backend.
 */
const exposedWithoutAutoCert = (autoCert: string) => ({
  rule: `!has(self.exposure) || !has(${autoCert}) || !${autoCert}`,
  message:
    "exposure cannot be set with requestAutoCert: the certificate the cluster's signer issues names only the Tenant's cluster-internal host names, which clients in other clusters do not use. Expose the Tenant over plain HTTP, with HTTPS on a Gateway listener",
  fieldPath: '.exposure',
});

export const tenantSchema = z.object({
  spec: managedSpec(
    tenantSpec.meta({
      description: "The Tenant to keep in the target cluster. Pools can be added; an existing pool's size never changes.",
      'x-kubernetes-validations': [
        {
          rule: 'oldSelf.pools.all(p, self.pools.exists(q, q.name == p.name && q.servers == p.servers && q.volumesPerServer == p.volumesPerServer))',
          message: 'pools can be added, but an existing pool cannot be removed or resized: the MinIO Operator cannot apply that',
        },
        {
          rule: 'self.requestAutoCert == oldSelf.requestAutoCert',
          message: 'requestAutoCert cannot change after creation: it decides the endpoint clients were given',
        },
        {
          rule: 'has(self.clusterDomain) == has(oldSelf.clusterDomain) && (!has(self.clusterDomain) || self.clusterDomain == oldSelf.clusterDomain)',
          message: 'clusterDomain cannot change after creation: it decides the endpoint clients were given',
        },
      ],
    }),
    'Tenant',
    { bucket: storeBucketWith([objectLockFixedRule]).optional(), exposure: storeExposure.optional() },
    [exposedWithoutAutoCert('self.forProvider.requestAutoCert'), storeBucketKept],
  ),
  status: managedStatus(
    z.object({
      namespace: z.string().optional().meta({ description: 'Namespace of the minio.min.io Tenant in the target cluster.' }),
      name: z.string().optional().meta({ description: 'Name of the minio.min.io Tenant in the target cluster.' }),
      endpoint: z
        .string()
        .optional()
        .meta({ description: "The Tenant's in-cluster S3 endpoint (http on port 80, or https on 443 with requestAutoCert)." }),
      currentState: z.string().optional().meta({ description: "The MinIO Operator's status.currentState." }),
      healthStatus: z.string().optional().meta({ description: "The MinIO Operator's status.healthStatus: green, yellow or red." }),
      availableReplicas: z
        .int()
        .optional()
        .meta({ description: "The MinIO Operator's status.availableReplicas: MinIO servers available." }),
      exposure: exposureStatus,
    }),
  ),
});
export type Tenant = KubeObject & z.infer<typeof tenantSchema>;

export const TenantKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'Tenant',
  plural: 'tenants',
  shortNames: ['rooktenant'],
  categories: ['crossplane', 'managed', 'minio', 'rook'],
  scope: 'Namespaced',
  description: 'A MinIO Operator Tenant (minio.min.io/v2) that provider-rook keeps in a target cluster.',
  schema: tenantSchema,
  printerColumns: [
    ...readyColumns,
    { name: 'STATE', type: 'string', jsonPath: '.status.atProvider.currentState' },
    { name: 'TARGET-NAMESPACE', type: 'string', jsonPath: '.spec.targetNamespace', priority: 1 },
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    protectedColumn,
    rotatedColumn,
    policiesColumn,
    ageColumn,
  ],
};

export const tenantClassSchema = z.object({
  spec: tenantSpec
    .extend({
      ...classPlacement.fields,
      exposure: classExposure.optional(),
      protectClaims,
      features: featurePolicy.optional(),
      credentialRotation: credentialRotation.optional(),
      reclaimPolicy: reclaimPolicy.default('Delete'),
      namespacePrefix: namespacePrefix('minio-', 'Each Tenant gets its own target namespace, <prefix><managed resource name>.'),
      allowedNamespaces: allowedNamespaces(),
    })
    .meta({
      description:
        "What each claim of this class gets: a Tenant of these pools, in a namespace of its own in the chosen Provider's cluster.",
      'x-kubernetes-validations': [classPlacement.rule, exposedWithoutAutoCert('self.requestAutoCert')],
    }),
});
export type TenantClass = KubeObject & z.infer<typeof tenantClassSchema>;

export const TenantClassKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'TenantClass',
  plural: 'tenantclasses',
  shortNames: ['rooktenantclass'],
  categories: ['crossplane', 'class', 'minio', 'rook'],
  scope: 'Namespaced',
  statusSubresource: false,
  description:
    'A non-portable class of MinIO Operator Tenants: pools, the target (providerRef, or providerSelector for the scheduler) and the reclaim policy for claims.',
  schema: tenantClassSchema,
  printerColumns: [
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    { name: 'PROVIDER-SELECTOR', type: 'string', jsonPath: '.spec.providerSelector.matchLabels' },
    ageColumn,
  ],
};
