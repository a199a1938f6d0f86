// Provider (kubernetes.crossplane.io/v1alpha2): how to reach one target cluster.
import { z } from 'zod';
import { ageColumn, conditions, localRef, type KubeObject } from './common.ts';
import type { KindDefinition } from './crd.ts';

export const providerSchema = z.object({
  spec: z.object({
    credentialsSecretRef: localRef.meta({
      description: "Secret in the Provider's namespace holding either a 'kubeconfig' key, or 'endpoint' plus " +
        "'clusterCA' and one of 'token', 'clientCert'+'clientKey' or 'username'+'password' (plain text values).",
    }),
    operatorInstall: z.object({
      enabled: z.boolean().default(false).meta({ description: 'Install the Rook MinIO operator into the target when it is missing.' }),
      image: z.string().optional().meta({ description: 'Operator image (default rook/minio:v1.2.7).' }),
      namespace: z.string().optional().meta({ description: 'Namespace for the operator (default rook-minio-system).' }),
    }).optional().meta({ description: 'Whether provider-rook may install the Rook MinIO operator into the target cluster. Off by default.' }),
  }),
  status: z.object({
    conditions,
    users: z.int().optional().meta({ description: 'How many managed resources use this Provider. While any does, deleting the Provider waits.' }),
    serverVersion: z.string().optional().meta({ description: "The target API server's version, as last seen." }),
    operator: z.object({
      present: z.boolean().meta({ description: 'The operator\'s CRD is Established and its Deployment exists.' }),
      installedBy: z.enum(['provider-rook', 'other']).optional().meta({ description: 'Who installed what is there: provider-rook (it carries our marks) or someone else.' }),
      missing: z.array(z.string()).optional(),
    }).optional().meta({ description: 'The Rook MinIO operator in the target cluster.' }),
  }).optional(),
});

export type Provider = KubeObject & z.infer<typeof providerSchema>;

export const ProviderKind: KindDefinition = {
  group: 'kubernetes.crossplane.io',
  version: 'v1alpha2',
  kind: 'Provider',
  plural: 'providers',
  categories: ['crossplane', 'provider'],
  scope: 'Namespaced',
  description: 'A target Kubernetes cluster that provider-rook provisions into, and the Secret with its credentials.',
  schema: providerSchema,
  printerColumns: [
    { name: 'REACHABLE', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
    { name: 'VERSION', type: 'string', jsonPath: '.status.serverVersion' },
    { name: 'OPERATOR', type: 'boolean', jsonPath: '.status.operator.present' },
    { name: 'USERS', type: 'integer', jsonPath: '.status.users' },
    { name: 'SECRET', type: 'string', jsonPath: '.spec.credentialsSecretRef.name', priority: 1 },
    ageColumn,
  ],
};
