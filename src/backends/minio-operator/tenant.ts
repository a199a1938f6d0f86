// The MinIO Operator backend: a managed Tenant becomes one minio.min.io/v2 Tenant, alone in its own
// target namespace (the operator serves one Tenant per namespace, and names every tenant's S3
// Service "minio"), with root credentials in a configuration Secret provider-rook makes once.
import { objectKeyOf } from '../../kit/kube/object-key.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { fileURLToPath } from 'node:url';
import { kinds } from '../../apis/kinds.gen.ts';
import type { Tenant, TenantClass } from './api.ts';
import type { Backend } from '../../runtime/system/backend.ts';
import { claimLabels, refuseUnlessAllowed, type Claim } from '../../runtime/claims/claim.ts';
import { withoutNulls } from '../../kit/json.ts';
import { Jobs, Secrets, Services, type ResourceType } from '../../kit/kube/resources.ts';
import { FEATURES } from '../../runtime/claims/features.ts';
import { bucketUserCompanions, rotatingKeys, type BucketUser, type StoreAccess } from '../shared/minio-admin.ts';
import { storeWithBucketUser, userAccess } from '../shared/bucket-user.ts';
import type { ConnectionDetails } from '../../runtime/managed/types.ts';
import { externalNameOf } from '../../kit/meta.ts';
import type { KindContext, TargetObject } from '../../runtime/native/kind.ts';
import type { NativeKind } from '../../runtime/native/kind.ts';
import {
  exposed,
  exposureCompanion,
  Gateways,
  HTTPRoutes,
  retiredExposures,
  ServiceExports,
  type S3Service,
} from '../../runtime/native/exposure.ts';
import { bundleFromDirectory } from '../../runtime/operators/operator.ts';
import { randomKey } from '../shared/random.ts';
import { Reasons, UnprovenError } from '../../runtime/reasons.ts';
import { S3_ENDPOINT_KEYS, s3ConnectionDetails } from '../shared/s3-details.ts';
import { bucketNameFor } from '../shared/s3-names.ts';

export const MinioTenants: ResourceType = { apiVersion: 'minio.min.io/v2', kind: 'Tenant', plural: 'tenants', namespaced: true };

/** The MinIO Operator (config/operators/minio-operator, after upstream v7.1.1). */
export const minioOperatorBundle = bundleFromDirectory(
  fileURLToPath(new URL('../../../config/operators/minio-operator', import.meta.url)),
  {
    name: 'minio-operator',
    description: 'MinIO Operator',
    crdName: 'tenants.minio.min.io',
    deploymentName: 'minio-operator',
    defaultNamespace: 'minio-operator',
    defaultImage: 'minio/operator:v7.1.1',
  },
);

const configName = (tenant: string): string => `${tenant}-env-configuration`;

// The operator's own words for a Tenant's state (pkg/controller): shown as they are. Anything else a
// target writes there is not echoed into our status.
const KNOWN_STATES = new Set([
  'Initialized',
  'Waiting for Tenant to be healthy',
  'Provisioning MinIO Cluster IP Service',
  'Provisioning Console Service',
  'Provisioning MinIO Headless Service',
  'Provisioning MinIO Statefulset',
  'Waiting for MinIO TLS Certificate',
  'empty tenant credentials',
  'Tenant credentials are not set properly',
  'Another MinIO Tenant already exists in the namespace',
  'Statefulset not controlled by operator',
  'Different versions across MinIO Pools',
  'Updating MinIO Version',
  'Restarting MinIO',
]);

const RESOURCE = 'tenants.minio.crossplane.io';

/** The port MinIO serves S3 on in a Tenant's pods. */
const MINIO_POD_PORT = 9000;

/** The operator's S3 Service of a Tenant (always "minio"), selecting its pods: what an exposure leads to. */
const s3Service = (mr: Tenant, name: string): S3Service => ({
  store: name,
  name: 'minio',
  namespace: mr.spec.targetNamespace,
  port: mr.spec.forProvider.requestAutoCert ? 443 : 80,
  // MinIO listens on 9000 in its pods; the operator's Service maps 80 (443 with TLS) to it.
  podPort: MINIO_POD_PORT,
  selector: { 'v1.min.io/tenant': name },
});

/**
 * Why the Service "minio" is not the one the MinIO Operator made for this very Tenant, or undefined
 * when it is: its controller is this Tenant (by uid), it is not an ExternalName, and it selects the
 * Tenant's pods. Anyone who may edit Services in the Tenant's namespace could otherwise lead the
 * published endpoint, and any exposure of it, to pods of theirs.
 */
function notOperators(service: TargetObject, tenant: TargetObject): string | undefined {
  const spec = (service.spec ?? {}) as { type?: string; selector?: Record<string, string> };
  if (!service.metadata.ownerReferences?.some((r) => r.controller && r.kind === 'Tenant' && r.uid === tenant.metadata.uid))
    return 'its controller is not this Tenant';
  if (spec.type === 'ExternalName') return 'it is an ExternalName';
  if (spec.selector?.['v1.min.io/tenant'] !== tenant.metadata.name) return "it does not select the Tenant's pods";
  return undefined;
}

export function tenantEndpoint(mr: Tenant, namespace: string): string {
  const tls = mr.spec.forProvider.requestAutoCert;
  return `${tls ? 'https' : 'http'}://minio.${namespace}.svc.${mr.spec.forProvider.clusterDomain || 'cluster.local'}:${tls ? 443 : 80}`;
}

/** How buckets of a shared Tenant reach it (undefined while it has no Provider yet). */
export function tenantAccess(tenant: Tenant): StoreAccess | undefined {
  if (!tenant.spec.providerRef) return undefined;
  const name = externalNameOf(tenant.metadata);
  return {
    providerRef: { name: tenant.spec.providerRef.name },
    namespace: tenant.spec.targetNamespace,
    endpoint: tenantEndpoint(tenant, tenant.spec.targetNamespace),
    rootSecret: { name: configName(name), format: 'config.env' },
  };
}

const ownerOf = (mr: Tenant): string => `${RESOURCE}/${mr.metadata.uid}`;

/** The claim's bucket in its Tenant, and the user that reaches only it (made by a Job where config.env is). */
function bucketUser(mr: Tenant, name: string, ctx: KindContext): BucketUser | undefined {
  const bucket = mr.spec.bucket;
  if (!bucket) return undefined;
  return {
    base: name,
    namespace: mr.spec.targetNamespace,
    endpoint: tenantEndpoint(mr, mr.spec.targetNamespace),
    root: { name: configName(name), format: 'config.env' },
    bucket: bucket.name,
    access: bucket.access ?? 'ReadWrite',
    ownsBucket: true,
    ...rotatingKeys(ctx, ownerOf(mr)),
    ...(bucket.features ? { features: bucket.features } : {}),
  };
}

export const minioTenant: NativeKind<Tenant> = {
  resource: RESOURCE,
  target: MinioTenants,
  operator: minioOperatorBundle,

  desired(mr, name) {
    const { pools, image, requestAutoCert } = mr.spec.forProvider;
    return {
      apiVersion: MinioTenants.apiVersion,
      kind: MinioTenants.kind,
      metadata: { name, namespace: mr.spec.targetNamespace },
      spec: { pools, ...(image ? { image } : {}), requestAutoCert, configuration: { name: configName(name) } },
    };
  },

  companions(mr, name, ctx) {
    const ref = { name: configName(name), namespace: mr.spec.targetNamespace };
    const user = bucketUser(mr, name, ctx);
    return [
      {
        type: Secrets,
        ...ref,
        purpose: 'root credentials Secret',
        build: () => ({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { ...ref },
          type: 'Opaque',
          data: {
            'config.env': Buffer.from(
              `export MINIO_ROOT_USER="${randomKey(20)}"\nexport MINIO_ROOT_PASSWORD="${randomKey(40)}"\n`,
            ).toString('base64'),
          },
        }),
        // MinIO keeps the root credentials it started with.
        irreplaceable: {
          reason: Reasons.RootCredentialsLost,
          remedy: `Recreate it with the config.env the Tenant was made with (MINIO_ROOT_USER and MINIO_ROOT_PASSWORD), or delete this resource and create a new one`,
        },
      },
      ...(user ? bucketUserCompanions(user) : []),
      ...[exposureCompanion(mr.spec.exposure, s3Service(mr, name))].filter((c) => c !== undefined),
    ];
  },
  retired: (mr, name) => retiredExposures(mr.spec.exposure, s3Service(mr, name)),
  companionTypes: [Secrets, Jobs, Services, HTTPRoutes, ServiceExports],
  reads: [Gateways],
  // The operator's Service, which the endpoint names: inspect proves it from this cache (no request at rest).
  related: [
    {
      type: Services,
      labelSelector: 'v1.min.io/tenant',
      targetKey: (svc) => {
        const tenant = svc.metadata.labels?.['v1.min.io/tenant'];
        return svc.metadata.name === 'minio' && tenant ? keyOf({ ...objectKeyOf(svc), name: tenant }) : undefined;
      },
      keep: ['spec'],
    },
  ],

  references(observed) {
    const name = (observed.spec as { configuration?: { name?: string } } | undefined)?.configuration?.name;
    return name ? [{ type: Secrets, name, namespace: observed.metadata.namespace }] : [];
  },

  fixedAtCreation: ['.spec.configuration', '.spec.requestAutoCert'],

  // Only a bucket user's keys rotate: the root user lives in config.env, which the Tenant's pods read when they start.
  ...storeWithBucketUser(
    bucketUser,
    ownerOf,
    'this Tenant has no bucket user, and provider-rook does not rotate its root user (kept in config.env in the target, read by its pods when they start). Claims get a bucket user, whose keys rotate',
  ),

  async inspect({ mr, observed, companions, credentials, read, signal }) {
    const { name, namespace } = observed.metadata;
    const status = (observed.status ?? {}) as { currentState?: string; healthStatus?: string; availableReplicas?: number };
    const endpoint = tenantEndpoint(mr, namespace!);
    const service = await read.get<TargetObject>(Services, { namespace, name: 'minio' }, signal);
    const unproven = service && notOperators(service, observed);
    if (unproven)
      throw new UnprovenError(
        Reasons.EndpointNotProven,
        `the S3 Service ${namespace}/minio, which its endpoint names, is not the one the MinIO Operator made for this Tenant (${unproven}); ` +
          'the endpoint is withheld until it is (delete it, and the operator makes it again)',
        S3_ENDPOINT_KEYS,
      );
    const tenantReady = status.currentState === 'Initialized' && status.healthStatus === 'green';
    // The root user stays in the target: what an app gets is the bucket's own user, from its Secret (companions[1]).
    const bucket = mr.spec.bucket;
    const access: { ready: boolean; message?: string; rotating?: string; connectionDetails?: ConnectionDetails } = bucket
      ? userAccess(companions[2], companions[1], { bucket: bucket.name, namespace: namespace!, endpoint }, credentials)
      : { ready: true, connectionDetails: s3ConnectionDetails({ endpoint }) };
    const exposure = await exposed(mr.spec.exposure, s3Service(mr, name), companions, read, signal);
    const ready = tenantReady && access.ready && !exposure?.waiting;
    const state = status.currentState && KNOWN_STATES.has(status.currentState) ? status.currentState : undefined;
    return {
      ready,
      message: tenantReady
        ? (access.message ?? exposure?.waiting)
        : `MinIO Operator: ${state ?? (status.currentState ? 'a state provider-rook does not know' : 'not yet seen by the operator')}` +
          (state === 'Initialized'
            ? ` (health ${status.healthStatus === 'yellow' || status.healthStatus === 'red' ? status.healthStatus : 'unknown'})`
            : ''),
      ...(access.rotating ? { rotating: access.rotating } : {}),
      ...(tenantReady && access.ready && exposure?.waiting ? { reason: Reasons.WaitingForExposure } : {}),
      connectionDetails: access.connectionDetails,
      atProvider: withoutNulls({
        namespace,
        name,
        endpoint,
        currentState: state,
        healthStatus: status.healthStatus,
        availableReplicas: status.availableReplicas,
        exposure,
      }),
    };
  },
};

/** A claim's Tenant, from its class: in a namespace of its own, so no two Tenants ever share one. */
export function configureTenant(claim: Claim, cls: TenantClass, name: string): Tenant {
  refuseUnlessAllowed({ ...cls, kind: kinds.TenantClass.kind }, claim);
  const { pools, image, requestAutoCert, clusterDomain, reclaimPolicy, namespacePrefix, credentialRotation, exposure } = cls.spec;
  return {
    apiVersion: kinds.Tenant.apiVersion,
    kind: kinds.Tenant.kind,
    metadata: { name, labels: claimLabels(claim) },
    spec: {
      forProvider: withoutNulls({ pools, image, requestAutoCert, clusterDomain }) as Tenant['spec']['forProvider'],
      targetNamespace: `${namespacePrefix}${name}`.slice(0, 63).replace(/-+$/, ''),
      // The claim gets a bucket of the Tenant and a user of its own, never its root user.
      bucket: { name: bucketNameFor(claim), access: 'ReadWrite' },
      ...(credentialRotation ? { credentialRotation } : {}),
      ...(exposure ? { exposure } : {}),
      reclaimPolicy,
      writeConnectionSecretToRef: { name },
    },
  };
}

export const minioOperator: Backend<Tenant, TenantClass> = {
  managed: kinds.Tenant,
  class: kinds.TenantClass,
  native: minioTenant,
  configure: configureTenant,
  features: {
    supported: FEATURES,
    fixed: { objectLock: 'MinIO turns object lock on only when it makes a bucket' },
    path: ['bucket', 'features'],
  },
};
