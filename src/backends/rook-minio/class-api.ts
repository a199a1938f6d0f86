// ObjectStoreClass (minio.rook.crossplane.io/v1alpha1): a non-portable class of service. A platform
// team writes the store's spec once; every Bucket claim that resolves to this class gets a managed
// ObjectStore configured from it.
import { z } from 'zod';
import {
  ageColumn,
  classPlacement,
  credentialRotation,
  namespaceName,
  objectName,
  protectClaims,
  reclaimPolicy,
} from '../../apis/common.ts';
import type { KubeObject } from '../../apis/common.ts';
import type { KindDefinition } from '../../apis/crd.ts';
import { storeExposure } from '../../apis/delivery.ts';
import { featurePolicy } from '../../apis/features.ts';
import { minioStoreSpec } from './api.ts';

export const objectStoreClassSchema = z.object({
  spec: minioStoreSpec
    .extend({
      credentials: z
        .object({
          name: objectName().meta({
            description:
              'Not used as is: every provisioned store gets its own keys in <store>-access-keys, so two claims never share keys.',
          }),
          namespace: namespaceName()
            .optional()
            .meta({ description: 'Namespace of the access-keys Secrets in the target; also the default target namespace.' }),
        })
        .optional()
        .meta({ description: 'Where provisioned stores keep their access keys in the target cluster.' }),
      ...classPlacement.fields,
      exposure: storeExposure.optional(),
      protectClaims,
      features: featurePolicy.optional(),
      credentialRotation: credentialRotation.optional(),
      reclaimPolicy: reclaimPolicy.default('Delete').meta({
        description:
          'What happens when a claim on a store of this class is deleted: Delete removes the managed resource and the target store; Retain keeps both (Released).',
      }),
      targetNamespace: namespaceName().optional().meta({
        description: 'Namespace of provisioned stores in the target cluster. Defaults to credentials.namespace, else rook-minio.',
      }),
      allowedNamespaces: z.array(namespaceName()).optional().meta({
        description: 'Namespaces whose Bucket claims may use this class. Unset allows every namespace.',
      }),
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
