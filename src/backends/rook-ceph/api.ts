// Rook Ceph backend (ceph.rook.crossplane.io/v1alpha1): a managed CephBucket (one objectbucket.io
// ObjectBucketClaim in a target cluster, served by Rook's bucket provisioner from a CephObjectStore
// the platform team runs) and the CephBucketClass it is made from.
import { z } from 'zod';
import {
  allowedNamespaces,
  protectClaims,
  ageColumn,
  managedSpec,
  managedStatus,
  classPlacement,
  policiesColumn,
  protectedColumn,
  readyColumns,
  reclaimPolicy,
  type KubeObject,
} from '../../apis/common.ts';
import { bucketFeatures, featurePolicy, featureTransitionRules } from '../../apis/features.ts';
import type { KindDefinition } from '../../apis/crd.ts';
import { exposure } from '../../apis/delivery.ts';

const GROUP = 'ceph.rook.crossplane.io';
const VERSION = 'v1alpha1';
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const bucketClaimSpec = z.object({
  storageClassName: z
    .string()
    .min(1)
    .max(253)
    .meta({ description: "A StorageClass whose provisioner is Rook's (<rook namespace>.ceph.rook.io/bucket)." }),
  bucketName: z
    .string()
    .min(3)
    .max(63)
    .regex(dnsLabel)
    .optional()
    .meta({ description: "The bucket's name; when unset, Rook generates one from the claim's name." }),
  additionalConfig: z
    .object({
      maxObjects: z.string().max(32).optional().meta({ description: 'Quota on objects, e.g. "1000".' }),
      maxSize: z.string().max(32).optional().meta({ description: 'Quota on size, e.g. "2G".' }),
    })
    .optional()
    .meta({ description: 'What Rook allows by default (ROOK_OBC_ALLOW_ADDITIONAL_CONFIG_FIELDS); it acts on changes.' }),
});

/** What a claim asks of its bucket: of the features, Rook's claims take a quota (additionalConfig.maxSize). */
const features = bucketFeatures.optional().meta({
  description:
    "The claim's bucket features. Rook takes a quota only (as additionalConfig.maxSize, never above the class's own maxSize); the rest are refused before anything is made.",
});

export const cephBucketSchema = z.object({
  spec: managedSpec(
    bucketClaimSpec.extend({ features }).meta({
      description: 'The ObjectBucketClaim to keep in the target cluster.',
      'x-kubernetes-validations': [
        {
          rule: 'self.storageClassName == oldSelf.storageClassName',
          message: 'storageClassName cannot change after creation: the bucket lives in that object store',
        },
        {
          rule: 'has(self.bucketName) == has(oldSelf.bucketName) && (!has(self.bucketName) || self.bucketName == oldSelf.bucketName)',
          message: 'bucketName cannot change after creation',
        },
        ...featureTransitionRules,
      ],
    }),
    'bucket claim',
  ),
  status: managedStatus(
    z.object({
      namespace: z.string().optional().meta({ description: 'Namespace of the ObjectBucketClaim in the target cluster.' }),
      name: z.string().optional().meta({ description: 'Name of the ObjectBucketClaim in the target cluster.' }),
      phase: z.string().optional().meta({ description: "The ObjectBucketClaim's status.phase." }),
      bucketName: z
        .string()
        .optional()
        .meta({ description: 'The bucket in the object store, from its ObjectBucket (Rook may have generated it).' }),
      endpoint: z
        .string()
        .optional()
        .meta({ description: "The bucket's S3 endpoint, from its ObjectBucket's host and port (https on port 443)." }),
    }),
  ),
});
export type CephBucket = KubeObject & z.infer<typeof cephBucketSchema>;

export const CephBucketKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'CephBucket',
  plural: 'cephbuckets',
  shortNames: ['cephbkt'],
  categories: ['crossplane', 'managed', 'ceph', 'rook'],
  scope: 'Namespaced',
  description: 'A Rook Ceph bucket (objectbucket.io ObjectBucketClaim) that provider-rook keeps in a target cluster.',
  schema: cephBucketSchema,
  printerColumns: [
    ...readyColumns,
    { name: 'PHASE', type: 'string', jsonPath: '.status.atProvider.phase' },
    { name: 'BUCKET', type: 'string', jsonPath: '.status.atProvider.bucketName' },
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    protectedColumn,
    policiesColumn,
    ageColumn,
  ],
};

export const cephBucketClassSchema = z.object({
  spec: bucketClaimSpec
    .omit({ bucketName: true })
    .extend({
      ...classPlacement.fields,
      exposure: exposure.optional(),
      features: featurePolicy.optional(),
      protectClaims,
      reclaimPolicy: reclaimPolicy.default('Delete'),
      targetNamespace: z
        .string()
        .min(1)
        .max(63)
        .regex(dnsLabel)
        .default('rook-ceph-buckets')
        .meta({ description: 'Namespace of the claims in the target cluster.' }),
      allowedNamespaces: allowedNamespaces(),
    })
    .meta({
      description:
        "What each claim of this class gets: an ObjectBucketClaim of this StorageClass, in targetNamespace of the chosen Provider's cluster.",
      'x-kubernetes-validations': [classPlacement.rule],
    }),
});
export type CephBucketClass = KubeObject & z.infer<typeof cephBucketClassSchema>;

export const CephBucketClassKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'CephBucketClass',
  plural: 'cephbucketclasses',
  shortNames: ['cephbktclass'],
  categories: ['crossplane', 'class', 'ceph', 'rook'],
  scope: 'Namespaced',
  statusSubresource: false,
  description:
    'A non-portable class of Rook Ceph buckets: the StorageClass, the target (providerRef, or providerSelector for the scheduler) and the reclaim policy for claims.',
  schema: cephBucketClassSchema,
  printerColumns: [
    { name: 'STORAGECLASS', type: 'string', jsonPath: '.spec.storageClassName' },
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    { name: 'PROVIDER-SELECTOR', type: 'string', jsonPath: '.spec.providerSelector.matchLabels' },
    ageColumn,
  ],
};
