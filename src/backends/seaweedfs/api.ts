// SeaweedFS backend (seaweedfs.crossplane.io/v1alpha1), through the SeaweedFS operator's own kinds
// (seaweed.seaweedfs.com/v1): a managed SeaweedStore is one Seaweed in a target cluster, in a
// namespace of its own, with its filer's data on a volume; a managed SeaweedBucket is a bucket of a
// shared SeaweedStore with a user of its own whose policy reaches only that bucket. Both are made
// from a class per claim (SeaweedStoreClass, SeaweedBucketClass). The operator does the work;
// provider-rook never holds a root credential of a Seaweed (it has none to hold).
import { z } from 'zod';
import {
  allowedNamespaces,
  accessMode,
  ageColumn,
  bucketName,
  classPlacement,
  credentialRotation,
  managedSpec,
  managedStatus,
  objectName,
  policiesColumn,
  protectClaims,
  protectedColumn,
  readyColumns,
  reclaimPolicy,
  rotatedColumn,
  storeBucket,
  storeBucketKept,
  type KubeObject,
  namespacePrefix,
  clusterDomainName,
} from '../../apis/common.ts';
import { bucketFeatures, featurePolicy, featureTransitionRules } from '../../apis/features.ts';
import type { KindDefinition } from '../../apis/crd.ts';
import { classExposure, exposureStatus, storeExposure } from '../../apis/delivery.ts';

const GROUP = 'seaweedfs.crossplane.io';
const VERSION = 'v1alpha1';

// A resource.Quantity of bytes, as a volume's size is written ("10Gi").
const size = (description: string) =>
  z
    .string()
    .max(32)
    .regex(/^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$/, 'must be a size such as 10Gi or 500M')
    .meta({ description });

const storageClassName = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/)
  .optional()
  .meta({ description: "The StorageClass of the store's volumes; unset for the target's default." });

/** What provider-rook writes of a seaweed.seaweedfs.com/v1 Seaweed. */
export const seaweedSpec = z.object({
  image: z.string().min(1).max(512).default('chrislusf/seaweedfs:4.44').meta({
    description: "SeaweedFS's image for every component (the operator has no default).",
  }),
  volumeServers: z.int().min(1).max(100).default(1).meta({ description: 'Volume servers (pods), each with a volume of volumeSize.' }),
  volumeSize: size("The size of each volume server's volume, e.g. 10Gi.").default('10Gi'),
  filerSize: size(
    "The size of the filer's volume, where buckets, users and policies are kept: it is always persistent, so they survive a restart.",
  ).default('1Gi'),
  storageClassName,
});

const clusterDomain = clusterDomainName.optional().meta({
  description:
    "The target cluster's DNS domain (default cluster.local). The store's endpoint names its Service by its full name, <seaweed>-s3.<namespace>.svc.<domain>, which no namespace of the target can answer through a pod's DNS search path.",
});

const deleteObjects = z.boolean().default(false).meta({
  description:
    'Whether deleting a bucket under reclaim policy Delete also deletes the objects in it (the operator removes a bucket with everything in it). Off by default: the bucket is kept in the store with its objects, and an Event says so.',
});

export const seaweedStoreSchema = z.object({
  spec: managedSpec(
    seaweedSpec.extend({ clusterDomain }).meta({
      description:
        'The Seaweed to keep in the target cluster, and the domain its endpoint is named in. Its volumes cannot shrink, and the volume servers only grow.',
      'x-kubernetes-validations': [
        { rule: 'self.volumeServers >= oldSelf.volumeServers', message: 'volumeServers cannot go down: their volumes hold data' },
        {
          rule: 'self.filerSize == oldSelf.filerSize',
          message: 'filerSize cannot change after creation: the operator applies it only to a new filer',
        },
        {
          rule: 'self.volumeSize == oldSelf.volumeSize',
          message: 'volumeSize cannot change after creation: the operator applies it only to new volume servers',
        },
      ],
    }),
    'Seaweed',
    {
      bucket: storeBucket.optional(),
      exposure: storeExposure.optional(),
    },
    [storeBucketKept],
  ),
  status: managedStatus(
    z.object({
      namespace: z.string().optional().meta({ description: 'Namespace of the Seaweed in the target cluster.' }),
      name: z.string().optional().meta({ description: 'Name of the Seaweed in the target cluster.' }),
      endpoint: z.string().optional().meta({ description: "The store's S3 endpoint, as pods in the target reach it." }),
      phase: z.string().optional().meta({ description: "The operator's Ready condition, in its words." }),
      exposure: exposureStatus,
    }),
  ),
});
export type SeaweedStore = KubeObject & z.infer<typeof seaweedStoreSchema>;

export const SeaweedStoreKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'SeaweedStore',
  plural: 'seaweedstores',
  shortNames: ['swstore'],
  categories: ['crossplane', 'managed', 'seaweedfs', 'rook'],
  scope: 'Namespaced',
  description:
    'A SeaweedFS cluster (seaweed.seaweedfs.com/v1 Seaweed) that provider-rook keeps in a target cluster, with its filer persistent; with a bucket, a user of its own reaches only that bucket.',
  schema: seaweedStoreSchema,
  printerColumns: [
    ...readyColumns,
    { name: 'ENDPOINT', type: 'string', jsonPath: '.status.atProvider.endpoint', priority: 1 },
    { name: 'TARGET-NAMESPACE', type: 'string', jsonPath: '.spec.targetNamespace', priority: 1 },
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    protectedColumn,
    rotatedColumn,
    policiesColumn,
    ageColumn,
  ],
};

export const seaweedStoreClassSchema = z.object({
  spec: seaweedSpec
    .extend({
      ...classPlacement.fields,
      exposure: classExposure.optional(),
      features: featurePolicy.optional(),
      credentialRotation: credentialRotation.optional(),
      protectClaims,
      reclaimPolicy: reclaimPolicy.default('Delete'),
      deleteObjects: z.boolean().optional().meta({
        description:
          "Whether deleting a claim's store under reclaim policy Delete may delete the objects in its bucket. Off when unset: a store whose bucket may hold objects is kept, marked Retain, and an Event says so.",
      }),
      clusterDomain,
      namespacePrefix: namespacePrefix('seaweedfs-', 'Each store gets its own target namespace, <prefix><managed resource name>.'),
      allowedNamespaces: allowedNamespaces(),
    })
    .meta({
      description:
        "What each claim of this class gets: a Seaweed of this spec, in a namespace of its own in the chosen Provider's cluster.",
      'x-kubernetes-validations': [classPlacement.rule],
    }),
});
export type SeaweedStoreClass = KubeObject & z.infer<typeof seaweedStoreClassSchema>;

export const SeaweedStoreClassKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'SeaweedStoreClass',
  plural: 'seaweedstoreclasses',
  shortNames: ['swstoreclass'],
  categories: ['crossplane', 'class', 'seaweedfs', 'rook'],
  scope: 'Namespaced',
  statusSubresource: false,
  description:
    'A class of SeaweedFS stores, one per claim: the Seaweed, the target (providerRef or providerSelector) and the reclaim policy.',
  schema: seaweedStoreClassSchema,
  printerColumns: [
    { name: 'PROVIDER', type: 'string', jsonPath: '.spec.providerRef.name' },
    { name: 'PROVIDER-SELECTOR', type: 'string', jsonPath: '.spec.providerSelector.matchLabels' },
    ageColumn,
  ],
};

/** Where a shared store is: taken from the managed SeaweedStore when a claim's bucket is made. */
const storeAccess = z
  .object({
    name: objectName().meta({ description: 'The managed SeaweedStore, in this namespace.' }),
    seaweed: objectName().meta({ description: "The store's Seaweed in the target namespace." }),
    endpoint: z.string().min(1).max(512).meta({ description: "The store's S3 endpoint, as pods in the target reach it." }),
  })
  .meta({ description: 'The store the bucket is in, taken from the managed SeaweedStore when the bucket is made.' });

export const seaweedBucketSchema = z.object({
  spec: managedSpec(
    z
      .object({
        bucketName: bucketName().meta({ description: 'The bucket in the store. Fixed at creation.' }),
        access: accessMode.default('ReadWrite'),
        ownsBucket: z.boolean().default(true).meta({
          description: 'Whether this resource makes the bucket (and may remove it); false for an access grant to a bucket another owns.',
        }),
        store: storeAccess,
        deleteObjects,
        features: bucketFeatures
          .optional()
          .meta({ description: "The bucket's features; a grant's user (ownsBucket false) has none of its own." }),
      })
      .meta({
        description: 'A bucket and its user in a SeaweedFS store. All fixed at creation but deleteObjects and features.',
        'x-kubernetes-validations': [
          ...featureTransitionRules,
          {
            rule: 'self.ownsBucket || !has(self.features)',
            message: "features belong to the bucket's owner: a grant (ownsBucket false) has none",
            fieldPath: '.features',
          },
          { rule: 'self.bucketName == oldSelf.bucketName', message: 'forProvider.bucketName cannot change after creation' },
          {
            rule: 'self.store == oldSelf.store',
            message: 'forProvider.store cannot change after creation: the bucket lives in that store',
          },
          { rule: 'self.ownsBucket == oldSelf.ownsBucket', message: 'forProvider.ownsBucket cannot change after creation' },
          { rule: 'self.access == oldSelf.access', message: 'forProvider.access cannot change after creation: make a new grant instead' },
        ],
      }),
    'bucket user',
  ),
  status: managedStatus(
    z.object({
      bucket: z.string().optional().meta({ description: 'The bucket in the store.' }),
      endpoint: z.string().optional().meta({ description: "The store's S3 endpoint, as pods in the target reach it." }),
      user: z.string().optional().meta({ description: "The bucket user's name in the store (its IAM identity)." }),
      accessKey: z.string().optional().meta({ description: "The user's access key; its secret key is only in the connection Secret." }),
    }),
  ),
});
export type SeaweedBucket = KubeObject & z.infer<typeof seaweedBucketSchema>;

export const SeaweedBucketKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'SeaweedBucket',
  plural: 'seaweedbuckets',
  shortNames: ['swbkt'],
  categories: ['crossplane', 'managed', 'seaweedfs', 'rook'],
  scope: 'Namespaced',
  description:
    'A bucket and a user of its own, whose policy reaches only that bucket, in a shared SeaweedFS store: the operator makes them from its Bucket, S3Identity, S3Credentials, S3Policy and S3PolicyBinding.',
  schema: seaweedBucketSchema,
  printerColumns: [
    ...readyColumns,
    { name: 'BUCKET', type: 'string', jsonPath: '.spec.forProvider.bucketName' },
    { name: 'ACCESS', type: 'string', jsonPath: '.spec.forProvider.access' },
    { name: 'STORE', type: 'string', jsonPath: '.spec.forProvider.store.name' },
    protectedColumn,
    rotatedColumn,
    policiesColumn,
    ageColumn,
  ],
};

export const seaweedBucketClassSchema = z.object({
  spec: z
    .object({
      store: z
        .object({ name: objectName().meta({ description: 'The managed SeaweedStore, in this namespace.' }) })
        .meta({ description: "The store every claim of this class shares. It must be Ready before a claim's bucket is made." }),
      features: featurePolicy.optional(),
      credentialRotation: credentialRotation.optional(),
      protectClaims,
      reclaimPolicy: reclaimPolicy.default('Delete').meta({
        description:
          "What happens to a claim's bucket and user when the claim is deleted: Delete removes the user, and the bucket as deleteObjects says; Retain keeps both.",
      }),
      deleteObjects,
      allowedNamespaces: allowedNamespaces(),
    })
    .meta({ description: 'The shared store, and what happens to the bucket and user each claim gets.' }),
});
export type SeaweedBucketClass = KubeObject & z.infer<typeof seaweedBucketClassSchema>;

export const SeaweedBucketClassKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'SeaweedBucketClass',
  plural: 'seaweedbucketclasses',
  shortNames: ['swbktclass'],
  categories: ['crossplane', 'class', 'seaweedfs', 'rook'],
  scope: 'Namespaced',
  statusSubresource: false,
  description: 'A class of buckets in one shared SeaweedFS store: each claim gets a bucket of the store and a user that reaches only it.',
  schema: seaweedBucketClassSchema,
  printerColumns: [
    { name: 'STORE', type: 'string', jsonPath: '.spec.store.name' },
    { name: 'RECLAIM-POLICY', type: 'string', jsonPath: '.spec.reclaimPolicy' },
    ageColumn,
  ],
};
