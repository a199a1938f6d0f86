// Provider (kubernetes.crossplane.io/v1alpha2): how to reach one target cluster.
import { readdirSync } from 'node:fs';
import { z } from 'zod';
import { ageColumn, conditions, labelSelector, localRef, namespaceName, type KubeObject } from './common.ts';
import type { KindDefinition } from './crd.ts';
import { OperatorUpgrades, type OperatorUpgrade } from '../runtime/operators/waves.ts';
import { Providers, type ProviderObject } from '../runtime/providers/provider.ts';

/** The operators provider-rook ships a bundle for (config/operators/NAME/): any other name is refused where one is named. */
const SHIPPED = readdirSync(new URL('../../config/operators/', import.meta.url), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const operatorName = () =>
  z
    .enum(SHIPPED as [string, ...string[]])
    .meta({ description: 'The operator, by the name of the bundle provider-rook ships for it (a folder of config/operators/).' });

export const providerSchema = z.object({
  spec: z
    .object({
      credentialsSecretRef: localRef.meta({
        description:
          "Secret in the Provider's namespace holding either a 'kubeconfig' key, or 'endpoint' plus " +
          "'clusterCA' and one of 'token', 'clientCert'+'clientKey' or 'username'+'password' (plain text values).",
      }),
      allowedNamespaces: z
        .array(
          z
            .string()
            .min(1)
            .max(63)
            .regex(
              /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$|^[a-z0-9][-a-z0-9]*\*$/,
              'must be a namespace name, or a prefix of one followed by * (e.g. rook-minio-*)',
            ),
        )
        .optional()
        .meta({
          description:
            "Target namespaces stores may use. Unset: any except kube-system, kube-public, kube-node-lease and the operators' namespaces. " +
            'Set: only those listed, by name or by a prefix followed by * (rook-minio-* allows the namespace of each store of a class). ' +
            'A system or operator namespace is used (by a store, or to install an operator into) only when listed here by its name.',
        }),
      operators: z
        .array(
          z.object({
            name: operatorName(),
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
            version: z
              .string()
              .max(64)
              .optional()
              .meta({
                description:
                  'The version to install, or to upgrade or go back to (one of those provider-rook ships in config/operators/NAME/; the newest when unset). ' +
                  'An operator provider-rook installed is changed to it; one someone else installed only with adopt.',
              }),
            adopt: z.boolean().optional().meta({ description: 'Change the version of this operator although someone else installed it.' }),
            installBesideOthers: z
              .boolean()
              .optional()
              .meta({
                description:
                  "With install, install it although someone else's CRD of it is there without its Deployment at this name and namespace: " +
                  'their operator may run elsewhere, and both would then act on every store of the cluster.',
              }),
          }),
        )
        .optional()
        .meta({
          description: 'Per operator, whether provider-rook may install it into the target cluster. Off by default.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        }),
      consumers: z
        .array(
          z.object({
            claimNamespace: namespaceName().meta({ description: 'A namespace of the control cluster whose claims may deliver here.' }),
            namespaces: z
              .array(namespaceName())
              .min(1)
              .max(64)
              .meta({ description: 'The namespaces of this cluster those claims may deliver their connection Secrets into.' }),
          }),
        )
        .max(256)
        .optional()
        .meta({
          description:
            "Who may deliver connection Secrets into this cluster (a claim's spec.consumers): per namespace of the control cluster, the namespaces here its claims may write to. " +
            'Unset: nobody. A cluster that holds no store is registered for this alone.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['claimNamespace'],
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
          enabled: z
            .boolean()
            .default(false)
            .meta({ description: 'Install the operator into the target when it is missing (spec.operators[].install).' }),
          image: z.string().optional().meta({ description: "The operator's image (spec.operators[].image)." }),
          imageOverride: z
            .boolean()
            .optional()
            .meta({ description: "Install image although it is not the bundle's own (spec.operators[].imageOverride)." }),
          namespace: namespaceName().optional().meta({ description: 'Namespace for the operator (spec.operators[].namespace).' }),
        })
        .optional()
        .meta({
          description: "Deprecated (v0.1): the Rook MinIO operator's settings; read as spec.operators entry rook-minio. Move it there.",
        }),
    })
    .meta({
      description: 'How to reach the target cluster, and what provider-rook may do there.',
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
            kind: z.string().meta({ description: 'Kind of the managed resource.' }),
            name: z.string().meta({ description: "Name of the managed resource, in the Provider's namespace." }),
            uid: z.string().meta({ description: 'UID of the managed resource.' }),
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
            name: z.string().meta({ description: 'The operator, by the name of its bundle (a folder of config/operators/).' }),
            present: z.boolean().meta({ description: "The operator's CRD is Established and its Deployment exists." }),
            installedBy: z
              .enum(['provider-rook', 'other'])
              .optional()
              .meta({ description: 'Who installed what is there: provider-rook (it carries our marks) or someone else.' }),
            missing: z.array(z.string()).optional().meta({
              description: "What of the operator the target lacks: its CRD (or the CRD's Established condition) or its Deployment.",
            }),
            version: z.string().optional().meta({ description: "The version its Deployment runs (its image's tag)." }),
            upgrade: z
              .object({
                to: z.string().meta({ description: 'The version asked for.' }),
                phase: z.enum(['Progressing', 'Complete', 'Failed', 'Held']).meta({
                  description:
                    'Progressing, Complete, Failed, or Held: someone else installed the operator (and adopt is not set), or another Provider sets its version.',
                }),
                reason: z.string().optional().meta({
                  description:
                    "Why it failed, in a word: ProgressDeadlineExceeded (the Deployment's rollout stalled; it may recover by itself) or why the setting was refused.",
                }),
                message: z.string().optional().meta({ description: 'Why it failed or is held, or how it progresses.' }),
              })
              .optional()
              .meta({ description: 'A change to spec.operators[].version: under way, done, failed, or held (someone else installed it).' }),
          }),
        )
        .optional()
        .meta({
          description: 'Each operator a registered kind needs, in the target cluster.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        }),
    })
    .optional()
    .meta({ description: 'What provider-rook last observed of the target cluster.' }),
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
  shortNames: ['rookprovider'],
  categories: ['crossplane', 'provider', 'rook'],
  scope: 'Namespaced',
  description: 'A target Kubernetes cluster that provider-rook provisions into, and the Secret with its credentials.',
  schema: providerSchema,
  printerColumns: [
    { name: 'REACHABLE', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
    { name: 'VERSION', type: 'string', jsonPath: '.status.serverVersion' },
    { name: 'OPERATORS', type: 'string', jsonPath: '.status.operators[?(@.present==true)].name' },
    { name: 'OPERATOR-VERSIONS', type: 'string', jsonPath: '.status.operators[*].version' },
    { name: 'USERS', type: 'integer', jsonPath: '.status.users' },
    { name: 'CAPACITY', type: 'integer', jsonPath: '.spec.capacity.maxResources' },
    { name: 'SECRET', type: 'string', jsonPath: '.spec.credentialsSecretRef.name', priority: 1 },
    ageColumn,
  ],
};

export const operatorUpgradeSchema = z.object({
  spec: z
    .object({
      operator: operatorName(),
      version: z.string().min(1).max(64).meta({
        description: 'The version to bring the selected Providers to (one that provider-rook ships); an older one goes back.',
      }),
      providerSelector: labelSelector.meta({ description: 'Labels of the Providers, in this namespace, to upgrade.' }),
      maxConcurrent: z.int().min(1).max(100).default(1).meta({ description: 'At most this many Providers upgrade at once.' }),
    })
    .meta({ description: 'Which operator to bring to which version, on which Providers, how many at a time.' }),
  status: z
    .object({
      conditions,
      phase: z.enum(['Progressing', 'Complete', 'Failed']).optional().meta({
        description:
          'Progressing while Providers remain; Complete when every matched Provider runs the version; Failed when the wave stopped or no Provider matches.',
      }),
      matched: z.int().optional().meta({ description: 'How many Providers the selector matches.' }),
      upgraded: z.array(z.string()).optional().meta({ description: 'Providers that run the version.' }),
      upgrading: z.array(z.string()).optional().meta({ description: 'Providers whose upgrade is under way.' }),
      stoppedAt: z
        .object({
          provider: z.string().meta({ description: 'Name of the Provider where the wave stopped.' }),
          message: z.string().meta({ description: "Why: that Provider's upgrade phase (Failed or Held) and message." }),
        })
        .optional()
        .meta({ description: 'The Provider whose upgrade failed (or was held), where the wave stopped, and why.' }),
    })
    .optional()
    .meta({ description: 'How the wave stands, written by provider-rook.' }),
});
export type OperatorUpgradeObject = KubeObject & z.infer<typeof operatorUpgradeSchema>;
const _upgradeReadable: OperatorUpgrade['spec'] = {} as OperatorUpgradeObject['spec'];
void _upgradeReadable;

export const OperatorUpgradeKind: KindDefinition = {
  group,
  version,
  kind: OperatorUpgrades.kind,
  plural: OperatorUpgrades.plural,
  shortNames: ['opupgrade'],
  categories: ['crossplane', 'rook'],
  scope: 'Namespaced',
  description:
    "An operator upgrade (or a way back) across the Providers a selector matches, in waves: at most maxConcurrent at a time, in name order, stopping at the first failure. Each step sets one Provider's spec.operators[].version.",
  schema: operatorUpgradeSchema,
  printerColumns: [
    { name: 'OPERATOR', type: 'string', jsonPath: '.spec.operator' },
    { name: 'VERSION', type: 'string', jsonPath: '.spec.version' },
    { name: 'PHASE', type: 'string', jsonPath: '.status.phase' },
    { name: 'MATCHED', type: 'integer', jsonPath: '.status.matched' },
    { name: 'STOPPED-AT', type: 'string', jsonPath: '.status.stoppedAt.provider' },
    ageColumn,
  ],
};
