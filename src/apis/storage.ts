// The portable storage API (storage.crossplane.io/v1alpha1) app teams use: Bucket claims, the
// BucketClasses that name a concrete class of service, and the BucketPolicy that picks a default.
import { z } from 'zod';
import {
  accessMode,
  ageColumn,
  bindingPhase,
  conditions,
  credentialsStatus,
  labelSelector,
  localRef,
  namespaceName,
  objectName,
  objectRef,
  readyColumns,
  rotatedColumn,
  writeConnectionSecretToRef,
  type KubeObject,
} from './common.ts';
import { bucketFeatures, featureTransitionRules } from './features.ts';
import type { KindDefinition } from './crd.ts';
import { consumers, deliveries } from './delivery.ts';

const GROUP = 'storage.crossplane.io';
const VERSION = 'v1alpha1';

export const bucketClassSchema = z.object({
  // Top level, not under spec: portable classes of this era carry the reference there.
  classRef: z
    .object({
      apiVersion: z.string().min(1).meta({ description: 'apiVersion of the non-portable class, e.g. minio.rook.crossplane.io/v1alpha1.' }),
      kind: z.string().min(1).meta({ description: 'Kind of the non-portable class, e.g. ObjectStoreClass.' }),
      name: objectName().meta({ description: 'Name of the non-portable class.' }),
      namespace: namespaceName().meta({ description: "Namespace of the non-portable class (usually the platform team's)." }),
    })
    .meta({ description: 'The non-portable class that satisfies claims of this class.' }),
});
export type BucketClass = KubeObject & z.infer<typeof bucketClassSchema>;

export const BucketClassKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'BucketClass',
  plural: 'bucketclasses',
  shortNames: ['bktclass'],
  categories: ['crossplane', 'class', 'storage', 'rook'],
  scope: 'Namespaced',
  statusSubresource: false,
  description: 'A portable class of buckets in a namespace: Bucket claims name it, and it points at a provider-specific class.',
  schema: bucketClassSchema,
  printerColumns: [
    { name: 'CLASS-KIND', type: 'string', jsonPath: '.classRef.kind' },
    { name: 'CLASS', type: 'string', jsonPath: '.classRef.name' },
    { name: 'CLASS-NAMESPACE', type: 'string', jsonPath: '.classRef.namespace' },
    ageColumn,
  ],
};

export const bucketPolicySchema = z.object({
  spec: z
    .object({
      defaultClassRef: localRef.meta({ description: 'The BucketClass, in this namespace, used by Bucket claims that name none.' }),
    })
    .meta({ description: "The namespace's default BucketClass." }),
});
export type BucketPolicy = KubeObject & z.infer<typeof bucketPolicySchema>;

export const BucketPolicyKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'BucketPolicy',
  plural: 'bucketpolicies',
  shortNames: ['bktpolicy'],
  categories: ['crossplane', 'policy', 'storage', 'rook'],
  scope: 'Namespaced',
  statusSubresource: false,
  description:
    'Names the default BucketClass of its namespace. Exactly one per namespace; with none or several, claims without a class wait.',
  schema: bucketPolicySchema,
  printerColumns: [{ name: 'DEFAULT-CLASS', type: 'string', jsonPath: '.spec.defaultClassRef.name' }, ageColumn],
};

export const bucketSchema = z.object({
  spec: z
    .object({
      classRef: localRef.optional().meta({ description: 'The BucketClass in this namespace; filled from the BucketPolicy when unset.' }),
      writeConnectionSecretToRef: writeConnectionSecretToRef.optional(),
      consumers: consumers.optional(),
      resourceRef: objectRef.optional().meta({ description: 'The managed resource bound to this claim; set by provider-rook.' }),
      providerSelector: labelSelector.optional().meta({
        description:
          "Narrows the class's choice of Provider (e.g. matchLabels region: eu); it can never reach a Provider the class excludes. " +
          'With a class that names one Provider, that Provider must match.',
      }),
      features: bucketFeatures.optional().meta({
        description:
          "Versioning, object lock with a default retention, a quota and lifecycle rules for the bucket: its class's defaults fill what is unset, within the class's limits. A backend without a feature refuses the claim, naming it.",
      }),
      shareWith: z
        .array(
          z.object({
            namespace: namespaceName().meta({ description: 'A namespace whose BucketAccess claims may reach this bucket.' }),
            modes: z.array(accessMode).min(1).max(3).default(['ReadOnly']).meta({
              description: 'The access modes that namespace may ask for; ReadOnly unless listed.',
            }),
          }),
        )
        .max(64)
        .optional()
        .meta({
          description:
            'Who else may reach this bucket, through BucketAccess claims in their own namespace. Each gets a user of its own; ' +
            'taking a namespace or a mode off this list revokes the users it allowed, and so does deleting this claim.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['namespace'],
        }),
    })
    .meta({
      description:
        'What the app team asks for: the class, where its connection Secret goes, the bucket features and who else may reach the bucket.',
      // What a claim is bound to is a fact once recorded: pointing it elsewhere would reach a resource made for another claim.
      'x-kubernetes-validations': [
        {
          rule: '!has(self.consumers) || size(self.consumers) == 0 || has(self.writeConnectionSecretToRef)',
          message: "spec.consumers are delivered copies of the claim's own connection Secret: set spec.writeConnectionSecretToRef too",
          fieldPath: '.consumers',
        },
        ...featureTransitionRules,
        {
          rule: '!has(oldSelf.resourceRef) || (has(self.resourceRef) && self.resourceRef == oldSelf.resourceRef)',
          message: 'spec.resourceRef cannot change or be removed once set: make a new Bucket instead',
          fieldPath: '.resourceRef',
        },
        {
          rule: '!has(oldSelf.resourceRef) || (has(self.classRef) == has(oldSelf.classRef) && (!has(self.classRef) || self.classRef == oldSelf.classRef))',
          message: 'spec.classRef cannot change once the claim has a resource (spec.resourceRef): make a new Bucket instead',
          fieldPath: '.classRef',
        },
      ],
    })
    .default({}),
  status: z
    .object({
      conditions,
      bindingPhase,
      providerRef: z
        .object({ name: z.string().meta({ description: "Name of the Provider, in the namespace of the bound resource (its class's)." }) })
        .optional()
        .meta({ description: 'The Provider (target cluster) holding the bound resource.' }),
      protected: z.boolean().optional().meta({
        description:
          'Its class protects it (its managed resource carries label rook.crossplane.io/protected=true): its deletion is refused at admission. A claim protects itself with that label.',
      }),
      credentials: credentialsStatus,
      deliveries,
    })
    .optional()
    .meta({ description: 'How the claim stands, written by provider-rook.' }),
});
export type Bucket = KubeObject & z.infer<typeof bucketSchema>;

export const BucketKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'Bucket',
  plural: 'buckets',
  shortNames: ['bkt'],
  categories: ['crossplane', 'claim', 'storage', 'rook'],
  scope: 'Namespaced',
  description:
    'A claim for an object store. provider-rook provisions one from the claimed class and writes its endpoint and keys into writeConnectionSecretToRef.',
  schema: bucketSchema,
  printerColumns: [
    { name: 'STATUS', type: 'string', jsonPath: '.status.bindingPhase' },
    ...readyColumns,
    { name: 'CLASS', type: 'string', jsonPath: '.spec.classRef.name' },
    { name: 'CONNECTION-SECRET', type: 'string', jsonPath: '.spec.writeConnectionSecretToRef.name' },
    { name: 'PROVIDER', type: 'string', jsonPath: '.status.providerRef.name' },
    { name: 'PROTECTED', type: 'boolean', jsonPath: '.status.protected' },
    { name: 'CONSUMERS', type: 'string', jsonPath: '.status.deliveries[?(@.delivered==true)].to' },
    rotatedColumn,
    { name: 'RESOURCE', type: 'string', jsonPath: '.spec.resourceRef.name', priority: 1 },
    ageColumn,
  ],
};

export const bucketAccessSchema = z.object({
  spec: z
    .object({
      bucketRef: z
        .object({
          namespace: namespaceName().meta({ description: 'Namespace of the Bucket claim.' }),
          name: objectName().meta({ description: 'Name of the Bucket claim.' }),
        })
        .meta({
          description:
            'The Bucket claim to reach, in its own namespace. Its spec.shareWith must allow this namespace and mode. Fixed at creation.',
        }),
      mode: accessMode,
      writeConnectionSecretToRef: writeConnectionSecretToRef.optional(),
      consumers: consumers.optional(),
      resourceRef: objectRef.optional().meta({ description: "The managed resource holding this access's user; set by provider-rook." }),
    })
    .meta({
      description: "The Bucket to reach, the access mode, and where the connection Secret with the new user's keys goes.",
      'x-kubernetes-validations': [
        {
          rule: '!has(self.consumers) || size(self.consumers) == 0 || has(self.writeConnectionSecretToRef)',
          message: "spec.consumers are delivered copies of the claim's own connection Secret: set spec.writeConnectionSecretToRef too",
          fieldPath: '.consumers',
        },
        { rule: 'self.bucketRef == oldSelf.bucketRef', message: 'spec.bucketRef cannot change: make a new BucketAccess instead' },
        { rule: 'self.mode == oldSelf.mode', message: 'spec.mode cannot change: make a new BucketAccess instead' },
        {
          // provider-rook clears it when it revokes the user, and records the grant it makes again (same name, a new uid).
          rule:
            '!has(oldSelf.resourceRef) || !has(self.resourceRef) || (self.resourceRef.name == oldSelf.resourceRef.name && ' +
            'has(self.resourceRef.__namespace__) == has(oldSelf.resourceRef.__namespace__) && (!has(self.resourceRef.__namespace__) || self.resourceRef.__namespace__ == oldSelf.resourceRef.__namespace__) && ' +
            'has(self.resourceRef.kind) == has(oldSelf.resourceRef.kind) && (!has(self.resourceRef.kind) || self.resourceRef.kind == oldSelf.resourceRef.kind))',
          message: 'spec.resourceRef cannot be pointed at another resource once set: it is set by provider-rook',
          fieldPath: '.resourceRef',
        },
      ],
    }),
  status: z
    .object({
      conditions,
      bindingPhase,
      bucket: z.string().optional().meta({ description: 'The bucket this access reaches.' }),
      credentials: credentialsStatus,
      deliveries,
    })
    .optional()
    .meta({ description: 'How the access stands, written by provider-rook.' }),
});
export type BucketAccess = KubeObject & z.infer<typeof bucketAccessSchema>;

export const BucketAccessKind: KindDefinition = {
  group: GROUP,
  version: VERSION,
  kind: 'BucketAccess',
  plural: 'bucketaccesses',
  shortNames: ['bktaccess'],
  categories: ['crossplane', 'claim', 'storage', 'rook'],
  scope: 'Namespaced',
  description:
    "Access to another namespace's Bucket, as that Bucket's spec.shareWith allows: a user of its own, with a policy of this mode on that bucket alone, its keys in writeConnectionSecretToRef. Deleting it revokes the user.",
  schema: bucketAccessSchema,
  printerColumns: [
    { name: 'STATUS', type: 'string', jsonPath: '.status.bindingPhase' },
    ...readyColumns,
    { name: 'BUCKET-NAMESPACE', type: 'string', jsonPath: '.spec.bucketRef.namespace' },
    { name: 'BUCKET', type: 'string', jsonPath: '.spec.bucketRef.name' },
    { name: 'MODE', type: 'string', jsonPath: '.spec.mode' },
    { name: 'CONSUMERS', type: 'string', jsonPath: '.status.deliveries[?(@.delivered==true)].to' },
    rotatedColumn,
    ageColumn,
  ],
};
