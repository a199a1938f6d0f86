// Schema pieces shared by every kind: conditions, references, connection Secrets, policies.
import { z } from 'zod';
import type { Condition as RuntimeCondition } from '../kit/conditions.ts';
import { supportedPoliciesRule } from '../runtime/managed/policies.ts';
import { DURATION } from '../runtime/native/rotation.ts';
import { bucketFeatures, featureTransitionRules } from './features.ts';

export const condition = z.object({
  type: z.string().meta({ description: 'Type of condition, e.g. Ready or Synced.' }),
  status: z.enum(['True', 'False', 'Unknown']).meta({ description: 'Whether the condition holds: True, False or Unknown.' }),
  reason: z.string().meta({ description: 'A CamelCase word saying why the condition has this status.' }),
  message: z.string().optional().meta({ description: 'Human-readable detail.' }),
  lastTransitionTime: z.string().meta({ description: 'When the status last changed (RFC 3339).' }),
  observedGeneration: z.int().optional().meta({ description: 'The metadata.generation this condition was computed from.' }),
});
// The runtime's Condition is the same shape; this fails to compile if the two drift apart.
export type Condition = z.infer<typeof condition> & RuntimeCondition;
const _sameShape: RuntimeCondition = {} as z.infer<typeof condition>;
void _sameShape;

export const conditions = z
  .array(condition)
  .optional()
  .meta({
    description: 'Observed conditions of this object.',
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  });

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A Kubernetes object name (a DNS-1123 subdomain): never ".", ".." or "/", so it cannot reach another API path. */
export const objectName = (): z.ZodString =>
  z.string().min(1).max(253).regex(SUBDOMAIN, 'must be a lower-case DNS-1123 subdomain (a-z, 0-9, "-", ".") of at most 253 characters');
/** A namespace name (a DNS-1123 label). */
export const namespaceName = (): z.ZodString =>
  z.string().min(1).max(63).regex(LABEL, 'must be a lower-case DNS-1123 label (a-z, 0-9, "-") of at most 63 characters');

/**
 * A class's namespace prefix: each store gets the target namespace <prefix><managed resource name>.
 * Managed resource names of claims stay within 52 characters, so 11 keep every namespace within 63.
 */
export const namespacePrefix = (byDefault: string, description: string) =>
  z
    .string()
    .max(11)
    .regex(/^([a-z0-9][-a-z0-9]*)?$/, 'must begin with a-z or 0-9, and hold only a-z, 0-9 and "-"')
    .default(byDefault)
    .meta({ description });

/** A class's allowedNamespaces: the namespaces whose claims may use it. */
export const allowedNamespaces = () =>
  z
    .array(namespaceName())
    .optional()
    .meta({ description: 'Namespaces whose Bucket claims may use this class. Unset allows every namespace.' });

export const localRef = z.object({ name: objectName().meta({ description: 'Name of the referenced object.' }) });

export const providerRef = z
  .object({
    name: objectName().meta({ description: 'Name of the Provider (kubernetes.crossplane.io) that says which target cluster to use.' }),
    namespace: namespaceName().optional().meta({
      description: "Namespace of the Provider. Must equal this object's namespace when set: credentials are never read across namespaces.",
    }),
  })
  .meta({ description: 'The Provider whose credentials reach the target cluster.' });

const selectorRequirement = z
  .object({
    key: z.string().min(1).max(317).meta({ description: 'The label key the requirement applies to.' }),
    operator: z
      .enum(['In', 'NotIn', 'Exists', 'DoesNotExist'])
      .meta({ description: "How the label's value relates to values: In, NotIn, Exists or DoesNotExist." }),
    values: z
      .array(z.string().max(63))
      .max(64)
      .optional()
      .meta({ description: 'The label values: at least one for In and NotIn, none for Exists and DoesNotExist.' }),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
        message: 'In and NotIn need values; Exists and DoesNotExist take none',
      },
    ],
  });

/** A standard label selector (metav1.LabelSelector). */
export const labelSelector = z.object({
  matchLabels: z
    .record(z.string(), z.string().max(63))
    .optional()
    .meta({ description: 'Labels an object must carry, each with this value. ANDed with matchExpressions.' }),
  matchExpressions: z
    .array(selectorRequirement)
    .max(32)
    .optional()
    .meta({ description: 'Requirements on labels, all of which an object must meet.' }),
});

export const providerSelector = labelSelector.meta({
  description:
    'Labels of the Providers, in this namespace, the scheduler may choose from. It picks a usable one with room and the fewest managed resources.',
});

// A resource.Quantity as Kubernetes' own CRDs write it: an integer, or a string such as "8Gi".
const QUANTITY = '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';
const quantity = (description: string) =>
  z.union([z.int(), z.string()]).meta({ description, pattern: QUANTITY, 'x-kubernetes-int-or-string': true });

const typedRef = z.object({
  apiGroup: z.string().max(253).optional().meta({ description: 'API group of the referenced object; unset for the core group.' }),
  kind: z.string().min(1).max(63).meta({ description: 'Kind of the referenced object.' }),
  name: objectName().meta({ description: 'Name of the referenced object.' }),
});

/**
 * A PersistentVolumeClaim spec (core/v1), its essential fields checked here: a malformed one would be
 * accepted, never become a volume, and leave the store waiting for its operator with no word why.
 */
export const persistentVolumeClaimSpec = z
  .object({
    accessModes: z
      .array(z.enum(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod']))
      .min(1)
      .max(4)
      .meta({ description: 'How the volume may be mounted: ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod.' }),
    resources: z
      .object({
        requests: z
          .object({ storage: quantity("The volume's size, e.g. 8Gi.") })
          .meta({ description: 'The least storage the volume must have.' }),
        limits: z
          .object({ storage: quantity('The most the volume may grow to.').optional() })
          .optional()
          .meta({ description: 'The most storage the volume may have.' }),
      })
      .meta({ description: 'The storage the volume asks for.' }),
    storageClassName: z
      .string()
      .max(253)
      .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$/)
      .optional()
      .meta({ description: 'The StorageClass; "" for none (a pre-bound volume); unset for the target\'s default.' }),
    volumeMode: z
      .enum(['Filesystem', 'Block'])
      .optional()
      .meta({ description: 'Filesystem (the default) or Block: whether the volume is mounted as a file system or a raw device.' }),
    volumeName: objectName().optional().meta({ description: 'Bind to this PersistentVolume.' }),
    volumeAttributesClassName: objectName()
      .optional()
      .meta({ description: "The VolumeAttributesClass that sets the volume's mutable attributes; unset for none." }),
    selector: labelSelector.optional().meta({ description: 'Labels of the PersistentVolumes it may bind.' }),
    dataSource: typedRef.optional().meta({ description: 'A VolumeSnapshot or PersistentVolumeClaim the volume starts as a copy of.' }),
    dataSourceRef: typedRef
      .extend({
        namespace: namespaceName().optional().meta({ description: "Namespace of the referenced object; the claim's own when unset." }),
      })
      .optional()
      .meta({ description: 'The object the volume is populated from (a snapshot, a claim or a volume populator).' }),
  })
  .meta({ description: 'A PersistentVolumeClaim spec: accessModes and resources.requests.storage at least.' });

/**
 * Where a class puts what it provisions: one named Provider, or any Provider its selector matches.
 * The rule goes into the class spec's x-kubernetes-validations.
 */
export const classPlacement = {
  fields: {
    providerRef: providerRef.optional(),
    providerSelector: providerSelector.optional(),
  },
  rule: {
    rule: 'has(self.providerRef) != has(self.providerSelector)',
    message:
      'name exactly one of providerRef (one target cluster) and providerSelector (the scheduler chooses among the matching Providers)',
  },
};

export const objectRef = z.object({
  // Bounded, so rules that compare references stay within the API server's cost budget.
  apiVersion: z.string().max(317).optional().meta({ description: 'apiVersion of the referenced object.' }),
  kind: z.string().max(63).optional().meta({ description: 'Kind of the referenced object.' }),
  name: objectName().meta({ description: 'Name of the referenced object.' }),
  namespace: namespaceName().optional().meta({ description: 'Namespace of the referenced object.' }),
  uid: z
    .string()
    .max(64)
    .optional()
    .meta({ description: 'UID of the referenced object, which tells it from a later one of the same name.' }),
});

/** A class's protection of the claims it serves (and their managed resources) against deletion. */
export const protectClaims = z.boolean().optional().meta({
  description:
    'Protect every claim of this class, and its managed resource, against deletion: a delete is refused at admission (label rook.crossplane.io/protected=true on the managed resource) until a platform team removes that label.',
});

const duration = (what: string) =>
  z.string().max(32).regex(DURATION, 'must be a duration such as 90s, 10m, 1h or 30d').meta({ description: what });

/** When a resource's keys rotate, and how long the previous ones keep working (rotation.ts). */
export const credentialRotation = z
  .object({
    gracePeriod: duration(
      'How long the previous keys keep working after a rotation, so apps can pick up the new ones (a duration such as 90s, 10m, 1h or 30d). 1h when unset; at most 90d.',
    ).optional(),
    every: duration(
      'Rotate the keys this long after the last rotation (or the creation). Unset: only when asked, by a new value of annotation rook.crossplane.io/rotate-credentials.',
    ).optional(),
  })
  .meta({
    description:
      "Rotation of the bucket user's keys (dual-key): new keys are made beside the old, written to the connection Secret once they work, and the old ones are removed when the grace period ends. A new value of annotation rook.crossplane.io/rotate-credentials on the claim or the resource asks for a rotation.",
  });

export const reclaimPolicy = z.enum(['Delete', 'Retain', 'Orphan']).meta({
  description:
    'What happens to the target object when this resource (or its claim) goes away: Delete removes it, Retain and Orphan (a synonym) keep it.',
});

/**
 * An S3 bucket name as S3 accepts it (the AWS rules, which MinIO and Ceph apply too): 3 to 63
 * lower-case letters, digits, "-" and "."; a letter or digit at each end; not shaped like an IP
 * address; no "..", no "xn--" prefix and no "-s3alias" suffix.
 */
export const bucketName = () =>
  z
    .string()
    .min(3)
    .max(63)
    .regex(
      /^[a-z0-9][a-z0-9.-]*[a-z0-9]$/,
      'must be 3 to 63 lower-case letters, digits, "-" and ".", beginning and ending with a letter or digit',
    )
    .meta({
      'x-kubernetes-validations': [
        { rule: "!self.matches('^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$')", message: 'a bucket name must not look like an IP address' },
        {
          rule: "!self.contains('..') && !self.startsWith('xn--') && !self.endsWith('-s3alias')",
          message: 'S3 refuses "..", an "xn--" prefix and an "-s3alias" suffix in bucket names',
        },
      ],
    });

/** What a bucket user may do: COSI's access modes. */
/** A cluster's DNS domain (cluster.local, corp.example): what an in-cluster endpoint's host name ends with. */
export const CLUSTER_DOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const clusterDomainName = z.string().max(253).regex(CLUSTER_DOMAIN);

export const accessMode = z.enum(['ReadWrite', 'ReadOnly', 'WriteOnly']).meta({
  description: 'ReadWrite: list, get, put and delete objects; ReadOnly: list and get; WriteOnly: put.',
});

/** The bucket a store made for its claim, and its user (a store's root credentials never leave the target). */
/**
 * A bucket a store is made with, and its user. `rules`: what the backend adds to the bucket's
 * validations (a MinIO store's object lock, fixed at creation).
 */
export const storeBucketWith = (rules: object[] = []) =>
  z
    .object({
      name: bucketName().meta({ description: 'The bucket, made in the store. Fixed at creation.' }),
      access: accessMode.default('ReadWrite'),
      deleteObjects: z.boolean().optional().meta({
        description:
          'Whether deleting this resource under reclaim policy Delete may delete the objects in the bucket. Off when unset: a store whose bucket holds objects is kept with them, marked Retain (its user and keys are removed), and an Event says so.',
      }),
      features: bucketFeatures.optional(),
    })
    .meta({
      description:
        "A bucket made in the store with a user of its own, whose policy reaches only that bucket: the connection Secret holds that user's keys, never the store's root credentials.",
      'x-kubernetes-validations': [
        { rule: 'self.name == oldSelf.name', message: 'bucket.name cannot change after creation' },
        ...featureTransitionRules,
        ...rules,
      ],
    });
export const storeBucket = storeBucketWith();

/** A store's bucket stays: without it, nothing would name the objects of its user, nor remove them. */
export const storeBucketKept = {
  rule: '!has(oldSelf.bucket) || has(self.bucket)',
  message:
    'bucket cannot be removed once set: its user and keys would stay in the store with nothing to remove them. Delete this resource instead',
};

export const writeConnectionSecretToRef = z
  .object({
    name: objectName().meta({
      description: "Name of the Secret, in this object's namespace, that receives endpoint, username and password.",
    }),
  })
  .meta({ description: 'Where to write the connection Secret.' });

export const credentialsStatus = z
  .object({
    generation: z.int().meta({ description: 'How many times the keys rotated.' }),
    rotatedAt: z.string().meta({ description: 'When the keys in use were made (RFC 3339).' }),
    previousValidUntil: z.string().optional().meta({ description: 'Until when the previous keys keep working (RFC 3339).' }),
  })
  .optional()
  .meta({ description: 'The keys in use, once they have rotated.' });

export const bindingPhase = z.enum(['Unbound', 'Bound', 'Released']).optional().meta({
  description: 'Where this resource is in its claim binding lifecycle.',
});

export const readyColumns = [
  { name: 'READY', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
  { name: 'SYNCED', type: 'string', jsonPath: ".status.conditions[?(@.type=='Synced')].status" },
];
/** A managed resource's protection against deletion (config/admission/protection.yaml). */
export const protectedColumn = { name: 'PROTECTED', type: 'string', jsonPath: '.metadata.labels.rook\\.crossplane\\.io/protected' };
/** When the keys last rotated. */
export const rotatedColumn = { name: 'ROTATED', type: 'date', jsonPath: '.status.credentials.rotatedAt' };
/** A managed resource's management policies. */
export const policiesColumn = { name: 'POLICIES', type: 'string', jsonPath: '.spec.managementPolicies', priority: 1 };
export const ageColumn = { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export type { KubeObject, ObjectMeta } from '../kit/meta.ts';

/**
 * The spec every managed kind shares around its forProvider: which Provider and target namespace
 * (its identity, fixed at creation: changing either would make a second object and leave the first),
 * the reclaim policy, the connection Secret, and the claim and class it came from.
 */
export function managedSpec<F extends z.ZodType, E extends z.ZodRawShape = Record<never, z.ZodType>>(
  forProvider: F,
  object: string,
  extra?: E,
  rules: { rule: string; message: string; fieldPath?: string }[] = [],
) {
  return z
    .object({
      ...(extra ?? ({} as E)),
      forProvider,
      managementPolicies: z
        .array(z.enum(['Observe', 'Create', 'Update', 'Delete', 'LateInitialize', '*']))
        .max(6)
        .optional()
        .meta({
          description:
            'What provider-rook may do with the external resource (Crossplane\'s management policies): ["*"] everything (unset means this); ["Observe"] imports it read-only (status and connection details, nothing written to the target); leaving out Delete orphans it on deletion; [] pauses.',
          'x-kubernetes-list-type': 'set',
          'x-kubernetes-validations': [
            {
              rule: supportedPoliciesRule(),
              message:
                'spec.managementPolicies is not a supported combination: use ["*"], ["Observe"], [] or Observe with some of Create, Update, Delete and LateInitialize as crossplane-runtime allows them',
            },
          ],
        }),
      targetNamespace: namespaceName().meta({
        description: `Namespace of the ${object} in the target cluster; created when missing. Fixed at creation.`,
      }),
      providerRef: providerRef.optional().meta({
        description:
          'The Provider whose target cluster holds the object. When unset, the scheduler sets it once from providerSelector; it never changes after that.',
      }),
      providerSelector: providerSelector.optional(),
      reclaimPolicy: reclaimPolicy.optional().meta({
        description:
          'What happens to the target object when this resource (or its claim) goes away: Delete (when unset) removes it, Retain and Orphan (a synonym) keep it. deletionPolicy is the current name for it.',
      }),
      deletionPolicy: z.enum(['Delete', 'Orphan']).optional().meta({
        description:
          "Crossplane's name for reclaimPolicy: Delete removes the target object with this resource, Orphan keeps it. Set one of the two; set both, they must agree.",
      }),
      writeConnectionSecretToRef: writeConnectionSecretToRef.optional(),
      credentialRotation: credentialRotation.optional(),
      claimRef: objectRef.optional().meta({ description: 'The claim bound to this resource, if any.' }),
      classRef: objectRef.optional().meta({ description: 'The class this resource was provisioned from, if any.' }),
    })
    .meta({
      description: `The desired state: the ${object} to keep in the target cluster (forProvider), the Provider and target namespace that hold it, and what happens to it when this resource goes.`,
      'x-kubernetes-validations': [
        {
          rule: 'has(self.providerRef) || has(self.providerSelector)',
          message: 'set providerRef, or providerSelector for the scheduler to choose a Provider',
        },
        {
          rule: '!has(oldSelf.providerRef) || (has(self.providerRef) && self.providerRef == oldSelf.providerRef)',
          message: `providerRef cannot change once set: it says which target cluster holds the ${object}. Delete this resource and create a new one instead`,
        },
        {
          rule: "!has(self.deletionPolicy) || !has(self.reclaimPolicy) || (self.deletionPolicy == 'Delete') == (self.reclaimPolicy == 'Delete')",
          message:
            'deletionPolicy and reclaimPolicy say different things: set one of them (deletionPolicy is the current name), or both to agree (Orphan is Retain)',
        },
        {
          rule: 'self.targetNamespace == oldSelf.targetNamespace',
          message: `targetNamespace cannot change after creation: it says where the ${object} lives in the target. Delete this resource and create a new one instead`,
        },
        ...rules,
      ],
    });
}

/** The status every managed kind shares; atProvider is what the kind observes in the target. */
export function managedStatus<A extends z.ZodObject>(atProvider: A) {
  return z
    .object({
      conditions,
      bindingPhase,
      atProvider: atProvider.optional().meta({ description: 'What was last observed in the target cluster.' }),
      credentials: credentialsStatus,
    })
    .optional()
    .meta({ description: 'The observed state of this resource, written by provider-rook.' });
}
