// Buckets in a shared MinIO store (minio.crossplane.io/v1alpha1): a MinioBucketClass names a store a
// platform team runs (a managed Rook MinIO ObjectStore or MinIO Tenant in the class's namespace), and
// every claim of the class gets a managed MinioBucket: a bucket of that store and a user of its own
// whose policy reaches only that bucket. The store's root credentials never leave the target.
import { z } from 'zod';
import {
  allowedNamespaces,
  accessMode,
  ageColumn,
  bucketName,
  managedSpec,
  managedStatus,
  objectName,
  policiesColumn,
  protectedColumn,
  readyColumns,
  protectClaims,
  credentialRotation,
  rotatedColumn,
  reclaimPolicy,
  type KubeObject,
} from '../../apis/common.ts';
import type { KindDefinition } from '../../apis/crd.ts';
import { exposure } from '../../apis/delivery.ts';
import { bucketFeatures, featurePolicy, featureTransitionRules, objectLockFixedRule } from '../../apis/features.ts';

const GROUP = 'minio.crossplane.io';
const VERSION = 'v1alpha1';

export const storeKind = z.enum(['ObjectStore', 'Tenant']).meta({
  description:
    'ObjectStore: a managed Rook MinIO ObjectStore (minio.rook.crossplane.io); Tenant: a managed MinIO Tenant (minio.crossplane.io).',
});

const deleteObjects = z.boolean().default(false).meta({
  description:
    'Whether deleting a bucket under reclaim policy Delete also deletes the objects in it. Off by default: a bucket that holds objects is kept with them (its user is removed), and an Event says so.',
});

const image = z
  .string()
  .min(1)
  .max(512)
  .optional()
  .meta({ description: "MinIO's client image (mc) for the Jobs that make and remove users and buckets in the target." });

export const minioBucketClassSchema = z.object({
  spec: z
    .object({
      store: z
        .object({ kind: storeKind, name: objectName().meta({ description: 'The managed store, in this namespace.' }) })
        .meta({ description: "The store every claim of this class shares. It must be Ready before a claim's bucket is made." }),
      protectClaims,
      exposure: exposure.optional(),
      features: featurePolicy.optional(),
      credentialRotation: credentialRotation.optional(),
      reclaimPolicy: reclaimPolicy.default('Delete').meta({
        description:
          "What happens to a claim's bucket and user when the claim is deleted: Delete removes them (see deleteObjects); Retain keeps both.",
      }),
      deleteObjects,
      allowedNamespaces: allowedNamespaces(),
      image,
    })
    .meta({ description: 'The shared store, and what happens to the bucket and user each claim gets.' }),
});
export type MinioBucketClass = KubeObject & z.infer<typeof minioBucketClassSchema>;

/** Where the store is and how the Jobs reach it: taken from the managed store when a claim's bucket is made. */
const storeAccess = z
  .object({
    kind: storeKind,
    name: objectName().meta({ description: 'The managed store, in this namespace.' }),
    endpoint: z.string().min(1).max(512).meta({ description: "The store's S3 endpoint, as pods in the target reach it." }),
    rootSecret: z
      .object({
        name: objectName().meta({ description: 'Name of the Secret.' }),
        format: z.enum(['username-password', 'config.env']).meta({
          description: 'username-password: keys username and password (Rook MinIO); config.env: a MinIO config.env (MinIO Operator).',
        }),
      })
      .meta({
        description: "The store's root credentials Secret in the target namespace: only the Jobs there read it, never provider-rook.",
      }),
  })
  .meta({ description: 'The store the bucket is in and how the Jobs reach it, taken from the managed store when the bucket is made.' });

export const minioBucketSchema = z.object({
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
        image,
        features: bucketFeatures.optional().meta({
          description:
            "The bucket's versioning, object lock, default retention, quota and lifecycle rules (its owner's only; a grant has none), applied by the access Job.",
        }),
      })
      .meta({
        description: 'A bucket and its user in a MinIO store. All fixed at creation but deleteObjects and features.',
        'x-kubernetes-validations': [
          { rule: 'self.bucketName == oldSelf.bucketName', message: 'forProvider.bucketName cannot change after creation' },
          {
            rule: 'self.store == oldSelf.store',
            message: 'forProvider.store cannot change after creation: the bucket lives in that store',
          },
          { rule: 'self.ownsBucket == oldSelf.ownsBucket', message: 'forProvider.ownsBucket cannot change after creation' },
          { rule: 'self.access == oldSelf.access', message: 'forProvider.access cannot change after creation: make a new grant instead' },
          {
            rule: 'self.ownsBucket || !has(self.features)',
            message: 'forProvider.features: only the owner of a bucket sets its features',
            fieldPath: '.features',
          },
          ...featureTransitionRules,
          objectLockFixedRule,
        ],
      }),
    'bucket user',
  ),
  status: managedStatus(
    z.object({
      bucket: z.string().optional().meta({ description: 'The bucket in the store.' }),
      endpoint: z.string().optional().meta({ description: "The store's S3 endpoint, as pods in the target reach it." }),
      user: z
        .string()
        .optional()
        .meta({ description: "The bucket user's access key (its name in MinIO); its secret key is only in the connection Secret." }),
    }),
  ),
});
export type MinioBucket = KubeObject & z.infer<typeof minioBucketSchema>;

export const MinioBucketKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'MinioBucket',
  plural: 'miniobuckets',
  shortNames: ['miniobkt'],
  categories: ['crossplane', 'managed', 'minio', 'rook'],
  scope: 'Namespaced',
  description:
    'A bucket and a user of its own, whose policy reaches only that bucket, in a MinIO store that provider-rook or a platform team runs.',
  schema: minioBucketSchema,
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

export const MinioBucketClassKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'MinioBucketClass',
  plural: 'miniobucketclasses',
  shortNames: ['miniobktclass'],
  categories: ['crossplane', 'class', 'minio', 'rook'],
  scope: 'Namespaced',
  description: 'A class of buckets in one shared MinIO store: each claim gets a bucket of the store and a user that reaches only it.',
  schema: minioBucketClassSchema,
  statusSubresource: false,
  printerColumns: [
    { name: 'STORE-KIND', type: 'string', jsonPath: '.spec.store.kind' },
    { name: 'STORE', type: 'string', jsonPath: '.spec.store.name' },
    { name: 'RECLAIM-POLICY', type: 'string', jsonPath: '.spec.reclaimPolicy' },
    ageColumn,
  ],
};
