// The Rook MinIO backend: how a managed ObjectStore maps onto a minio.rook.io ObjectStore in the
// target, when that store is ready, and what its users need to connect. Everything else is the
// generic runtime.
import { objectKeyOf, type ObjectKey } from '../../kit/kube/object-key.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { fileURLToPath } from 'node:url';
import { kinds } from '../../apis/kinds.gen.ts';
import type { ObjectStore, ObjectStoreClass } from './api.ts';
import type { Backend } from '../../runtime/system/backend.ts';
import { configureObjectStore } from './objectstoreclass.ts';
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
import { Jobs, Secrets, Services, StatefulSets, type ResourceType } from '../../kit/kube/resources.ts';
import { FEATURES } from '../../runtime/claims/features.ts';
import { bucketUserCompanions, rotatingKeys, type BucketUser, type StoreAccess } from '../shared/minio-admin.ts';
import { storeWithBucketUser, userAccess } from '../shared/bucket-user.ts';
import type { ConnectionDetails } from '../../runtime/managed/types.ts';
import { externalNameOf } from '../../kit/meta.ts';
import type { Inspection, KindContext, ObjectReader, TargetObject } from '../../runtime/native/kind.ts';
import { withoutNulls } from '../../kit/json.ts';
import { randomKey } from '../shared/random.ts';
import { bundleFromDirectory } from '../../runtime/operators/operator.ts';
import { Reasons, UnprovenError } from '../../runtime/reasons.ts';
import { S3_ENDPOINT_KEYS, s3ConnectionDetails } from '../shared/s3-details.ts';
import { policyOf } from '../../runtime/managed/policies.ts';

/** The Rook MinIO operator (config/operators/rook-minio, modernised from rook v1.2.7, its last release). */
export const rookMinioOperator = bundleFromDirectory(fileURLToPath(new URL('../../../config/operators/rook-minio', import.meta.url)), {
  name: 'rook-minio',
  description: 'Rook MinIO operator',
  crdName: 'objectstores.minio.rook.io',
  deploymentName: 'rook-minio-operator',
  defaultNamespace: 'rook-minio-system',
  defaultImage: 'rook/minio:v1.2.7',
  legacy: true,
});

export const RookObjectStores: ResourceType = {
  apiVersion: 'minio.rook.io/v1alpha1',
  kind: 'ObjectStore',
  plural: 'objectstores',
  namespaced: true,
};

const MINIO_PORT = 9000;

function credentialsRef(mr: ObjectStore, name: string): { name: string; namespace: string } {
  const creds = mr.spec.forProvider.credentials;
  return { name: creds?.name ?? `${name}-access-keys`, namespace: creds?.namespace ?? mr.spec.targetNamespace };
}

/**
 * The operator's own Service selects every MinIO of the namespace (app=minio), so stores sharing a
 * namespace would share it. Each store gets a Service of ours that selects only its own servers.
 */
export const endpointServiceName = (store: string): string => `${store}-s3`;

export function endpointOf({ namespace, name }: Required<ObjectKey>, clusterDomain?: string): string {
  return `http://${endpointServiceName(name)}.${namespace}.svc.${clusterDomain || 'cluster.local'}:${MINIO_PORT}`;
}

const RESOURCE = 'objectstores.minio.rook.crossplane.io';

const ownerOf = (mr: ObjectStore): string => `${RESOURCE}/${mr.metadata.uid}`;

/** The claim's bucket in its store, and the user that reaches only it (made by a Job where the root keys are). */
function bucketUser(mr: ObjectStore, name: string, ctx: KindContext): BucketUser | undefined {
  const bucket = mr.spec.bucket;
  if (!bucket) return undefined;
  const root = credentialsRef(mr, name);
  return {
    base: name,
    namespace: root.namespace,
    endpoint: endpointOf({ namespace: mr.spec.targetNamespace, name }, mr.spec.forProvider.clusterDomain),
    root: { name: root.name, format: 'username-password' },
    bucket: bucket.name,
    access: bucket.access ?? 'ReadWrite',
    ownsBucket: true,
    ...rotatingKeys(ctx, ownerOf(mr)),
    ...(bucket.features ? { features: bucket.features } : {}),
  };
}

/**
 * How buckets of a shared store reach it: undefined while it has no Provider yet, and for a store
 * only observed (provider-rook made no endpoint Service for it, so nothing proves where that name leads).
 */
export function objectStoreAccess(store: ObjectStore): StoreAccess | undefined {
  if (!store.spec.providerRef || policyOf(store.spec as { managementPolicies?: string[] }).onlyObserve) return undefined;
  const name = externalNameOf(store.metadata);
  const root = credentialsRef(store, name);
  return {
    providerRef: { name: store.spec.providerRef.name },
    namespace: root.namespace,
    endpoint: endpointOf({ namespace: store.spec.targetNamespace, name }, store.spec.forProvider.clusterDomain),
    rootSecret: { name: root.name, format: 'username-password' },
  };
}

const storeLabels = (name: string): Record<string, string> => ({ app: 'minio', objectstore: name });

/** The Service provider-rook makes for a store's S3 API: what an exposure leads to. */
const s3Service = (mr: ObjectStore, name: string): S3Service => ({
  store: name,
  name: endpointServiceName(name),
  namespace: mr.spec.targetNamespace,
  port: MINIO_PORT,
  selector: storeLabels(name),
});

export const minioObjectStore: NativeKind<ObjectStore> = {
  resource: RESOURCE,
  target: RookObjectStores,
  operator: rookMinioOperator,

  desired(mr, name) {
    const { scope, annotations, placement, clusterDomain } = mr.spec.forProvider;
    return {
      apiVersion: RookObjectStores.apiVersion,
      kind: RookObjectStores.kind,
      metadata: { name, namespace: mr.spec.targetNamespace },
      spec: {
        scope,
        ...(annotations ? { annotations } : {}),
        // Rook's sample leaves placement keys empty ("tolerations:"), which means nothing to apply.
        ...(placement ? { placement: withoutNulls(placement) } : {}),
        // The operator reads the Secret from credentials.namespace, so it is always set.
        credentials: credentialsRef(mr, name),
        ...(clusterDomain ? { clusterDomain } : {}),
      },
    };
  },

  // The access-keys Secret we chose (or the user's, on import) is recorded in the spec once known.
  lateInitialize(mr, observed) {
    const observedCreds = (observed.spec as { credentials?: { name: string; namespace?: string } } | undefined)?.credentials;
    if (mr.spec.forProvider.credentials || !observedCreds) return false;
    mr.spec.forProvider.credentials = { ...observedCreds };
    return true;
  },

  // The operator labels its StatefulSet app=minio, objectstore=<store>; readiness changes arrive through it.
  related: [
    // The operator's headless Service: what a store observed only names as its endpoint, read from this
    // cache with no request at rest (such a store, unmarked, is woken through the key it imports).
    {
      type: Services,
      labelSelector: 'app=minio',
      targetKey: (svc) =>
        svc.metadata.labels?.objectstore ? keyOf({ ...objectKeyOf(svc), name: svc.metadata.labels.objectstore }) : undefined,
    },
    {
      type: StatefulSets,
      labelSelector: 'app=minio',
      targetKey: (sts) =>
        sts.metadata.labels?.objectstore ? keyOf({ ...objectKeyOf(sts), name: sts.metadata.labels.objectstore }) : undefined,
      keep: ['status'], // inspect reads readyReplicas; the pod template is most of the object
    },
  ],

  companions(mr, name, ctx) {
    const keys = credentialsRef(mr, name);
    const user = bucketUser(mr, name, ctx);
    return [
      {
        type: Secrets,
        ...keys,
        purpose: 'access-keys Secret',
        build: () => ({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { ...keys },
          type: 'Opaque',
          data: { username: Buffer.from(randomKey(20)).toString('base64'), password: Buffer.from(randomKey(40)).toString('base64') },
        }),
        // MinIO reads its keys once, when the operator makes its StatefulSet.
        irreplaceable: {
          reason: Reasons.AccessKeysLost,
          remedy:
            `Recreate it with the keys the store was made with (username and password; the operator copied them into the MINIO_ACCESS_KEY and ` +
            `MINIO_SECRET_KEY variables of StatefulSet ${mr.spec.targetNamespace}/${name}), or delete this resource and create a new one`,
        },
      },
      {
        type: Services,
        name: endpointServiceName(name),
        namespace: mr.spec.targetNamespace,
        purpose: 'endpoint Service',
        publishedAs: S3_ENDPOINT_KEYS,
        build: () => ({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: endpointServiceName(name), namespace: mr.spec.targetNamespace },
          // The type too: an ExternalName Service (a CNAME elsewhere) in its place is drift, repaired.
          spec: {
            type: 'ClusterIP',
            selector: storeLabels(name),
            ports: [{ name: 's3', port: MINIO_PORT, targetPort: MINIO_PORT, protocol: 'TCP' }],
          },
        }),
      },
      ...(user ? bucketUserCompanions(user) : []),
      ...[exposureCompanion(mr.spec.exposure, s3Service(mr, name))].filter((c) => c !== undefined),
    ];
  },

  retired: (mr, name) => retiredExposures(mr.spec.exposure, s3Service(mr, name)),
  companionTypes: [Secrets, Services, Jobs, HTTPRoutes, ServiceExports],
  reads: [Gateways],

  // Only a bucket user's keys rotate: the operator reads the root keys once, when it makes the StatefulSet.
  ...storeWithBucketUser(
    bucketUser,
    ownerOf,
    'this store has no bucket user, and its root keys cannot rotate: the Rook MinIO operator reads them once, when it makes the store, and they never leave the target. Claims get a bucket user, whose keys rotate',
  ),

  // The operator builds a store's StatefulSet once and never updates it.
  fixedAtCreation: ['.spec.scope', '.spec.annotations', '.spec.credentials', '.spec.clusterDomain'],

  // An imported store brings its own keys: the Secret it names may be used though we did not make it.
  references(observed) {
    const creds = (observed.spec as { credentials?: { name?: string; namespace?: string } } | undefined)?.credentials;
    return creds?.name ? [{ type: Secrets, name: creds.name, namespace: creds.namespace ?? observed.metadata.namespace }] : [];
  },

  // The operator's Service and StatefulSet point at the store with "apiVersion: v1alpha1" (no group),
  // which the garbage collector cannot map: they would outlive the store.
  dependents: [StatefulSets, Services].map((type) => ({ type, labelSelector: (store) => `app=minio,objectstore=${store.metadata.name}` })),

  async inspect({ read, mr, observed, companions, credentials, signal }) {
    const { name, namespace } = observed.metadata;
    const domain = mr.spec.forProvider.clusterDomain;
    // Observed only, nothing of ours is beside it: its endpoint is the operator's own Service, if one is there.
    if (policyOf(mr.spec as { managementPolicies?: string[] }).onlyObserve) return observedStore(read, mr, observed, signal);
    const endpoint = endpointOf({ namespace: namespace!, name }, domain);
    // The store's own size (an observed-only import may differ from the spec): what its operator runs.
    const want = (observed.spec as { scope?: { nodeCount?: number } } | undefined)?.scope?.nodeCount ?? mr.spec.forProvider.scope.nodeCount;
    // The operator writes no status; its StatefulSet (same name, same namespace) tells readiness.
    const sts = await read.get<{ metadata: { name: string }; status?: { readyReplicas?: number } }>(
      StatefulSets,
      { namespace, name },
      signal,
    );
    const readyReplicas = sts?.status?.readyReplicas ?? 0;
    const storeReady = sts !== undefined && readyReplicas >= want;
    // The root keys stay in the target: what an app gets is the bucket's own user, from its Secret (companions[2]).
    const bucket = mr.spec.bucket;
    const access = bucket
      ? userAccess(
          companions[3],
          companions[2],
          { bucket: bucket.name, namespace: companions[3]?.metadata.namespace ?? namespace!, endpoint },
          credentials,
        )
      : { ready: true, connectionDetails: s3ConnectionDetails({ endpoint }) };
    const exposure = await exposed(mr.spec.exposure, s3Service(mr, name), companions, read, signal);
    const ready = storeReady && access.ready && !exposure?.waiting;
    const { connectionDetails, rotating } = access as { connectionDetails?: ConnectionDetails; rotating?: string };
    return {
      ...(rotating ? { rotating } : {}),
      ready,
      message: !sts
        ? `waiting for the MinIO operator to create StatefulSet ${namespace}/${name}`
        : !storeReady
          ? `${readyReplicas}/${want} MinIO servers ready`
          : (access.message ?? exposure?.waiting),
      ...(storeReady && access.ready && exposure?.waiting ? { reason: Reasons.WaitingForExposure } : {}),
      connectionDetails,
      atProvider: { namespace, name, endpoint, readyReplicas, ...(exposure ? { exposure } : {}) },
    };
  },
};

/**
 * A store imported read-only: provider-rook made no Service for it, so its connection Secret names the
 * operator's headless Service of the same name when the operator made it for this very store (its
 * owner reference names the store's uid), and no endpoint otherwise: the store is then not Ready.
 */
async function observedStore(read: ObjectReader, mr: ObjectStore, observed: TargetObject, signal: AbortSignal): Promise<Inspection> {
  const { name, namespace } = observed.metadata;
  const want = (observed.spec as { scope?: { nodeCount?: number } } | undefined)?.scope?.nodeCount ?? mr.spec.forProvider.scope.nodeCount;
  const [sts, service] = await Promise.all([
    read.get<{ metadata: { name: string }; status?: { readyReplicas?: number } }>(StatefulSets, { namespace, name }, signal),
    read.get<TargetObject>(Services, { namespace, name }, signal),
  ]);
  const readyReplicas = sts?.status?.readyReplicas ?? 0;
  // What the operator writes (owner reference to this very store, headless, app=minio); a store observed only is trusted no further.
  const spec = service?.spec as { type?: string; clusterIP?: string; selector?: Record<string, string> } | undefined;
  const operators =
    service?.metadata.ownerReferences?.some((r) => r.kind === 'ObjectStore' && r.uid === observed.metadata.uid) &&
    spec?.type !== 'ExternalName' &&
    spec?.clusterIP === 'None' &&
    spec.selector?.app === 'minio';
  if (!operators) {
    throw new UnprovenError(
      Reasons.EndpointNotProven,
      `no Service in the target leads to this store: provider-rook makes none for a store it only observes, and the operator's own Service ${namespace}/${name} ` +
        `${service ? 'is not the one the operator makes for this store (its owner reference, type or selector differ)' : 'does not exist'}; its connection Secret names no endpoint`,
      S3_ENDPOINT_KEYS,
    );
  }
  const endpoint = operatorEndpointOf({ namespace: namespace!, name }, mr.spec.forProvider.clusterDomain);
  const storeReady = sts !== undefined && readyReplicas >= want;
  return {
    ready: storeReady,
    message: !sts
      ? `waiting for the MinIO operator to create StatefulSet ${namespace}/${name}`
      : `${readyReplicas}/${want} MinIO servers ready`,
    connectionDetails: s3ConnectionDetails({ endpoint }),
    atProvider: { namespace, name, endpoint, readyReplicas },
  };
}

/** The operator's headless Service, named after the store (it selects every MinIO server of the namespace). */
function operatorEndpointOf({ namespace, name }: Required<ObjectKey>, clusterDomain?: string): string {
  return `http://${name}.${namespace}.svc.${clusterDomain || 'cluster.local'}:${MINIO_PORT}`;
}

export const rookMinio: Backend<ObjectStore, ObjectStoreClass> = {
  managed: kinds.ObjectStore,
  class: kinds.ObjectStoreClass,
  native: minioObjectStore,
  configure: configureObjectStore,
  features: {
    supported: FEATURES,
    fixed: { objectLock: 'MinIO turns object lock on only when it makes a bucket' },
    path: ['bucket', 'features'],
  },
};
