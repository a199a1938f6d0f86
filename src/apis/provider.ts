// Provider (kubernetes.crossplane.io/v1alpha2): how to reach one target cluster.
import { z } from 'zod';
import { ageColumn, conditions, localRef, namespaceName, type KubeObject } from './common.ts';
import type { KindDefinition } from './crd.ts';
import { Providers, type ProviderObject } from '../runtime/native/provider.ts';

export const providerSchema = z.object({
  spec: z
    .object({
      credentialsSecretRef: localRef.meta({
        description:
          "Secret in the Provider's namespace holding either a 'kubeconfig' key, or 'endpoint' plus " +
          "'clusterCA' and one of 'token', 'clientCert'+'clientKey' or 'username'+'password' (plain text values).",
      }),
      allowedNamespaces: z
        .array(namespaceName())
        .optional()
        .meta({
          description:
            "Target namespaces stores may use. Unset: any except kube-system, kube-public, kube-node-lease and the operators' namespaces. " +
            'Set: only those listed. A system or operator namespace is used (by a store, or to install an operator into) only when listed here.',
        }),
      operators: z
        .array(
          z.object({
            name: z.string().min(1).meta({ description: 'The operator: rook-minio, minio-operator or rook-ceph.' }),
            install: z.boolean().default(false).meta({ description: 'Install it into the target when it is missing.' }),
            image: z
              .string()
              .optional()
              .meta({ description: "The operator's image (default: the bundle's). Another image is installed only with imageOverride." }),
            imageOverride: z.boolean().optional().meta({ description: "Install image although it is not the bundle's own." }),
            namespace: namespaceName().optional().meta({
              description:
                "Namespace for the operator (default: the bundle's). A system or another operator's namespace only when allowedNamespaces lists it.",
            }),
          }),
        )
        .optional()
        .meta({
          description: 'Per operator, whether provider-rook may install it into the target cluster. Off by default.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        }),
      capacity: z
        .object({
          maxResources: z
            .int()
            .min(0)
            .optional()
            .meta({ description: 'At most this many managed resources are scheduled onto this Provider. Unset: no limit.' }),
        })
        .optional()
        .meta({
          description:
            'What the scheduler may place on this target. Resources that name this Provider in providerRef count too, but are never refused.',
        }),
      operatorInstall: z
        .object({
          enabled: z.boolean().default(false),
          image: z.string().optional(),
          imageOverride: z.boolean().optional(),
          namespace: namespaceName().optional(),
        })
        .optional()
        .meta({
          description: "Deprecated (v0.1): the Rook MinIO operator's settings; read as spec.operators entry rook-minio. Move it there.",
        }),
    })
    .meta({
      'x-kubernetes-validations': [
        {
          rule: "!has(self.operatorInstall) || !has(self.operators) || !self.operators.exists(o, o.name == 'rook-minio')",
          message:
            'spec.operatorInstall (deprecated) and a spec.operators entry rook-minio both configure the Rook MinIO operator: keep only the entry',
        },
      ],
    }),
  status: z
    .object({
      conditions,
      users: z
        .int()
        .optional()
        .meta({ description: 'How many managed resources use this Provider. While any does, deleting the Provider waits.' }),
      serverVersion: z.string().optional().meta({ description: "The target API server's version, as last seen." }),
      reservations: z
        .array(
          z.object({
            kind: z.string(),
            name: z.string(),
            uid: z.string(),
          }),
        )
        .optional()
        .meta({
          description:
            'Managed resources the scheduler placed here while the Provider declares a capacity. The API server arbitrates each addition (optimistic concurrency), so capacity is never over-committed.',
        }),
      operators: z
        .array(
          z.object({
            name: z.string(),
            present: z.boolean().meta({ description: "The operator's CRD is Established and its Deployment exists." }),
            installedBy: z
              .enum(['provider-rook', 'other'])
              .optional()
              .meta({ description: 'Who installed what is there: provider-rook (it carries our marks) or someone else.' }),
            missing: z.array(z.string()).optional(),
          }),
        )
        .optional()
        .meta({
          description: 'Each operator a registered kind needs, in the target cluster.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        }),
    })
    .optional(),
});

export type Provider = KubeObject & z.infer<typeof providerSchema>;
// The runtime reads Providers through its own shape; this fails to compile if the schema drifts from it.
const _readable: ProviderObject['spec'] = {} as Provider['spec'];
void _readable;

const [group, version] = Providers.apiVersion.split('/') as [string, string];

export const ProviderKind: KindDefinition = {
  group,
  version,
  kind: Providers.kind,
  plural: Providers.plural,
  categories: ['crossplane', 'provider'],
  scope: 'Namespaced',
  description: 'A target Kubernetes cluster that provider-rook provisions into, and the Secret with its credentials.',
  schema: providerSchema,
  printerColumns: [
    { name: 'REACHABLE', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
    { name: 'VERSION', type: 'string', jsonPath: '.status.serverVersion' },
    { name: 'OPERATORS', type: 'string', jsonPath: '.status.operators[?(@.present==true)].name' },
    { name: 'USERS', type: 'integer', jsonPath: '.status.users' },
    { name: 'CAPACITY', type: 'integer', jsonPath: '.spec.capacity.maxResources' },
    { name: 'SECRET', type: 'string', jsonPath: '.spec.credentialsSecretRef.name', priority: 1 },
    ageColumn,
  ],
};
