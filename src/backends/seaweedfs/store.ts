// The SeaweedFS backend's store: a managed SeaweedStore becomes one seaweed.seaweedfs.com/v1 Seaweed
// in a target namespace of its own, its filer on a persistent volume (without one, buckets and
// users are lost when the filer restarts). With a bucket (a claim's), the operator also makes a
// bucket in it and a user of its own that reaches only that bucket (bucket-user.ts): the app gets
// that user's keys. A Seaweed has no root user for provider-rook to hold.
import { objectKeyOf, type ObjectKey } from '../../kit/kube/object-key.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { getCondition } from '../../kit/conditions.ts';
import { kinds } from '../../apis/kinds.gen.ts';
import type { SeaweedStore, SeaweedStoreClass } from './api.ts';
import { withoutNulls } from '../../kit/json.ts';
import { NetworkPolicies, Secrets, Services } from '../../kit/kube/resources.ts';
import { claimLabels, refuseUnlessAllowed, type Claim } from '../../runtime/claims/claim.ts';
import { nameOf, type KindContext, type NativeKind, type TargetObject } from '../../runtime/native/kind.ts';
import {
  exposed,
  exposureCompanion,
  Gateways,
  HTTPRoutes,
  retiredExposures,
  ServiceExports,
  type S3Service,
} from '../../runtime/native/exposure.ts';
import { Reasons, UnprovenError } from '../../runtime/reasons.ts';
import { importRequested } from '../../runtime/ownership/marks.ts';
import type { Backend } from '../../runtime/system/backend.ts';
import { S3_ENDPOINT_KEYS, s3ConnectionDetails } from '../shared/s3-details.ts';
import { bucketNameFor } from '../shared/s3-names.ts';
import {
  bucketTeardown,
  iamNameFor,
  identityObject,
  retiredNow,
  retiredPolicyObjects,
  rotatingKeys,
  userCompanions,
  USER_TYPES,
  seaweedFeatures,
  type SeaweedUser,
} from './bucket-user.ts';
import { userAccess } from './user-access.ts';
import {
  adminCredentials,
  adminSecretName,
  isolation,
  isolationName,
  LIFECYCLE_JOB,
  runsLifecycle,
  S3_CONFIG_KEY,
  S3_PORT,
  s3Config,
  s3ConfigName,
  seaweedNameFor,
  STORE_RESOURCE,
  storeOwnerOf,
} from './seaweed.ts';
import { S3CredentialsType, S3Identities, S3Policies, S3PolicyBindings, SeaweedBuckets, seaweedfsOperator, Seaweeds } from './operator.ts';

const RESOURCE = STORE_RESOURCE;
const ownerOf = storeOwnerOf;

/** The store's Seaweed name: the one it records, or the one its create gives it. */
const seaweedOf = (store: SeaweedStore): string => nameOf(seaweedStoreKind, store);

/** The operator's S3 Service of a Seaweed, selecting its gateway's pods: what an exposure leads to. */
const s3Service = ({ namespace, name }: Required<ObjectKey>): S3Service => ({
  store: name,
  name: `${name}-s3`,
  namespace,
  port: S3_PORT,
  selector: { 'app.kubernetes.io/name': 'seaweedfs', 'app.kubernetes.io/instance': name, 'app.kubernetes.io/component': 's3' },
});

/**
 * Why the operator's S3 Service at that name is not the one it made for this very Seaweed, or
 * undefined when it is: its controller is this Seaweed (by uid), it is not an ExternalName, and it
 * selects the gateway's pods (a selector with more labels selects fewer of them). Anyone who may
 * edit Services in the store's namespace could otherwise lead the published endpoint to pods of theirs.
 */
function notOperators(service: TargetObject, seaweed: TargetObject): string | undefined {
  const spec = (service.spec ?? {}) as { type?: string; selector?: Record<string, string> };
  const ns = seaweed.metadata.namespace!;
  const want = s3Service({ namespace: ns, name: seaweed.metadata.name }).selector;
  if (!service.metadata.ownerReferences?.some((r) => r.controller && r.kind === Seaweeds.kind && r.uid === seaweed.metadata.uid))
    return 'its controller is not this Seaweed';
  if (spec.type === 'ExternalName') return 'it is an ExternalName';
  if (!Object.entries(want).every(([k, v]) => spec.selector?.[k] === v)) return "it does not select the gateway's pods";
  return undefined;
}

/**
 * The gateway's address for pods in the target: plain HTTP, as the operator starts `weed s3`. Its
 * Service's full name: a shorter one (<svc>.<namespace>.svc) is tried with a pod's search domains
 * first, and <svc>.<namespace>.svc.svc.<domain> is a name the owner of a namespace called "svc" can
 * answer (a headless Service <namespace> with a pod of hostname <svc>), to take the app's requests.
 */
export const seaweedEndpoint = ({ namespace, name }: Required<ObjectKey>, clusterDomain?: string): string =>
  `http://${name}-s3.${namespace}.svc.${clusterDomain || 'cluster.local'}:${S3_PORT}`;

/** Where buckets of a shared store are made, and how pods there reach it. */
export interface SeaweedStoreAccess {
  providerRef: { name: string };
  namespace: string;
  seaweed: string;
  endpoint: string;
}

/** How buckets of a shared SeaweedStore reach it (undefined while it has no Provider yet). */
export function storeAccess(store: SeaweedStore): SeaweedStoreAccess | undefined {
  if (!store.spec.providerRef) return undefined;
  const name = seaweedOf(store);
  const namespace = store.spec.targetNamespace;
  const endpoint = seaweedEndpoint({ namespace, name }, store.spec.forProvider.clusterDomain);
  return { providerRef: { name: store.spec.providerRef.name }, namespace, seaweed: name, endpoint };
}

/** The claim's bucket in its store, and the user that reaches only it. */
function bucketUser(mr: SeaweedStore, name: string, ctx: KindContext): SeaweedUser | undefined {
  const bucket = mr.spec.bucket;
  if (!bucket) return undefined;
  return {
    base: `${name}-bucket`,
    namespace: mr.spec.targetNamespace,
    seaweed: name,
    iamName: iamNameFor(mr, name),
    bucket: bucket.name,
    access: bucket.access ?? 'ReadWrite',
    ownsBucket: true,
    deleteObjects: bucket.deleteObjects ?? false,
    ...rotatingKeys(ctx, ownerOf(mr)),
    ...(bucket.features ? { features: bucket.features } : {}),
  };
}

export const seaweedStoreKind: NativeKind<SeaweedStore> = {
  resource: RESOURCE,
  target: Seaweeds,
  operator: seaweedfsOperator,
  externalName: (mr) => seaweedNameFor(mr.metadata.name),

  desired(mr, name) {
    const { image, volumeServers, volumeSize, filerSize, storageClassName } = mr.spec.forProvider;
    const storage = storageClassName ? { storageClassName } : {};
    return {
      apiVersion: Seaweeds.apiVersion,
      kind: Seaweeds.kind,
      metadata: { name, namespace: mr.spec.targetNamespace },
      spec: {
        image,
        // `weed master` reports to a public address unless told not to (what `weed mini` calls
        // -master.telemetry=false): nothing of a store leaves its cluster.
        master: { replicas: 1, extraArgs: ['-telemetry=false'] },
        volume: { replicas: volumeServers, requests: { storage: volumeSize }, ...storage },
        // Buckets, users and policies are filer data: on the container's disk they go with every restart.
        filer: { replicas: 1, persistence: { enabled: true, resources: { requests: { storage: filerSize } }, ...storage } },
        // With an identity from its start: see s3Config. An imported Seaweed keeps the identities it names.
        s3: {
          replicas: 1,
          port: S3_PORT,
          ...(importRequested(mr) ? {} : { configSecret: { name: s3ConfigName(name), key: S3_CONFIG_KEY } }),
        },
        // Lifecycle rules are carried out by a worker of the admin server, and only so (see runsLifecycle).
        ...(runsLifecycle(mr)
          ? { admin: { credentialsSecret: { name: adminSecretName(name) } }, worker: { replicas: 1, jobType: LIFECYCLE_JOB } }
          : {}),
      },
    };
  },

  companions(mr, name, ctx) {
    const user = bucketUser(mr, name, ctx);
    const config = s3Config(mr, name, ctx);
    const admin = runsLifecycle(mr)
      ? [
          {
            type: Secrets,
            name: adminSecretName(name),
            namespace: mr.spec.targetNamespace,
            purpose: "admin server's credentials",
            build: () => adminCredentials(mr, name, ctx),
          },
        ]
      : [];
    return [
      ...(user
        ? [
            {
              type: S3Identities,
              name: user.base,
              namespace: user.namespace,
              purpose: "bucket's user",
              build: () => identityObject(user),
              grantsAccess: true,
            },
          ]
        : []),
      ...(user ? userCompanions(user) : []),
      ...[exposureCompanion(mr.spec.exposure, s3Service({ namespace: mr.spec.targetNamespace, name }))].filter((c) => c !== undefined),
      // An imported Seaweed is someone else's: who reaches it is theirs to say.
      ...(importRequested(mr)
        ? []
        : [
            {
              type: NetworkPolicies,
              name: isolationName(name),
              namespace: mr.spec.targetNamespace,
              purpose: 'NetworkPolicy',
              build: () => isolation(mr, name, ctx),
            },
          ]),
      ...admin,
      // Last: inspect reads the ones before by position. A copy put in its place withholds the
      // endpoint: the next gateway that starts would load the identities it holds.
      ...(importRequested(mr)
        ? []
        : [
            {
              type: Secrets,
              name: config.metadata.name,
              namespace: mr.spec.targetNamespace,
              purpose: "S3 gateway's identities",
              build: () => config,
              publishedAs: S3_ENDPOINT_KEYS,
            },
          ]),
    ];
  },
  retired: (mr, name) => [
    ...retiredExposures(mr.spec.exposure, s3Service({ namespace: mr.spec.targetNamespace, name })),
    ...(mr.spec.bucket ? retiredPolicyObjects(mr.spec.targetNamespace, `${name}-bucket`) : []),
  ],
  companionTypes: [S3Identities, ...USER_TYPES, Services, HTTPRoutes, ServiceExports, NetworkPolicies],
  // The operator finds a Bucket's or a user's Seaweed before it undoes anything: with it gone, they wait for good.
  undoneThroughTarget: [S3Identities, S3CredentialsType, S3Policies, S3PolicyBindings, SeaweedBuckets],
  reads: [Gateways, S3CredentialsType],
  teardown(mr, name, ctx) {
    const user = bucketUser(mr, name, ctx);
    return user && bucketTeardown(user, true);
  },
  // Only a bucket user's keys rotate (dual-key, as SeaweedBucket's): a Seaweed has no root user of provider-rook's.
  rotation: {
    retiredBy(mr, name, ctx) {
      const user = bucketUser(mr, name, ctx);
      return user ? retiredNow(user, ctx, ownerOf(mr)) : [];
    },
    cannotRotate: (mr) =>
      mr.spec.bucket
        ? undefined
        : 'this SeaweedStore has no bucket user, and a Seaweed has no root user of provider-rook to rotate. Claims get a bucket user, whose keys rotate',
  },

  // The operator's S3 Service, which the endpoint names: inspect proves it from this cache (no request at rest).
  related: [
    {
      type: Services,
      labelSelector: 'app.kubernetes.io/name=seaweedfs,app.kubernetes.io/component=s3',
      targetKey: (svc) => {
        const instance = svc.metadata.labels?.['app.kubernetes.io/instance'];
        return instance ? keyOf({ ...objectKeyOf(svc), name: instance }) : undefined;
      },
      keep: ['spec'],
    },
  ],

  async inspect({ mr, observed, companions, credentials, read, signal }) {
    const { name, namespace } = observed.metadata as { name: string; namespace: string };
    const endpoint = seaweedEndpoint({ namespace, name }, mr.spec.forProvider.clusterDomain);
    const service = await read.get<TargetObject>(Services, { namespace, name: `${name}-s3` }, signal);
    const unproven = service && notOperators(service, observed);
    if (unproven)
      throw new UnprovenError(
        Reasons.EndpointNotProven,
        `the S3 Service ${namespace}/${name}-s3, which its endpoint names, is not the one the SeaweedFS operator made for this store (${unproven}); ` +
          'the endpoint is withheld until it is (delete it, and the operator makes it again)',
        S3_ENDPOINT_KEYS,
      );
    const ready = getCondition(
      (observed.status as { conditions?: { type: string; status: string; reason?: string; observedGeneration?: number }[] } | undefined)
        ?.conditions,
      'Ready',
    );
    // Ready for the spec as it is now: after a change (an upgrade, an admin and worker added), the
    // operator's Ready of the spec before says nothing of it yet.
    const { generation } = observed.metadata as { generation?: number };
    const behind = ready?.observedGeneration !== undefined && generation !== undefined && ready.observedGeneration !== generation;
    const seaweedReady = ready?.status === 'True' && !behind;
    const bucket = mr.spec.bucket;
    const [identity, ...rest] = companions as (TargetObject | undefined)[];
    const place = {
      base: `${name}-bucket`,
      namespace,
      iamName: iamNameFor(mr, name),
      bucket: bucket?.name ?? '',
      ownsBucket: true,
      lifecycle: Boolean(bucket?.features?.lifecycle),
    };
    const access = bucket
      ? userAccess(place, { identity, companions: rest }, { endpoint, credentials })
      : { ready: true, connectionDetails: s3ConnectionDetails({ endpoint }) };
    const exposure = await exposed(mr.spec.exposure, s3Service({ namespace, name }), companions, read, signal);
    const noService = seaweedReady && !service ? `waiting for the SeaweedFS operator to make Service ${namespace}/${name}-s3` : undefined;
    return {
      ready: seaweedReady && !noService && access.ready && !exposure?.waiting,
      message: seaweedReady
        ? (noService ?? access.message ?? exposure?.waiting)
        : behind && ready?.status === 'True'
          ? `waiting for the SeaweedFS operator to apply the change to Seaweed ${namespace}/${name}`
          : `waiting for the SeaweedFS operator to start Seaweed ${namespace}/${name}${ready?.reason === 'NotReady' ? ': not all of its servers are ready' : ''}`,
      ...(seaweedReady && access.ready && exposure?.waiting ? { reason: Reasons.WaitingForExposure } : {}),
      ...('rotating' in access && access.rotating ? { rotating: access.rotating } : {}),
      connectionDetails: access.connectionDetails,
      atProvider: withoutNulls({ namespace, name, endpoint, phase: ready ? (seaweedReady ? 'Ready' : 'NotReady') : undefined, exposure }),
    };
  },
};

/** What a claim's store takes of its class as it is: the Seaweed's spec, and the domain its endpoint names. */
const FROM_CLASS = ['image', 'volumeServers', 'volumeSize', 'filerSize', 'storageClassName', 'clusterDomain'] as const;

/** A claim's store, from its class: in a namespace of its own, so a tenant of one store's namespace reaches no other's keys. */
export function configureSeaweedStore(claim: Claim, cls: SeaweedStoreClass, name: string): SeaweedStore {
  refuseUnlessAllowed({ ...cls, kind: kinds.SeaweedStoreClass.kind }, claim);
  const { reclaimPolicy, namespacePrefix, exposure, deleteObjects, credentialRotation } = cls.spec;
  return {
    apiVersion: kinds.SeaweedStore.apiVersion,
    kind: kinds.SeaweedStore.kind,
    metadata: { name, labels: claimLabels(claim) },
    spec: {
      forProvider: withoutNulls(
        Object.fromEntries(FROM_CLASS.map((field) => [field, cls.spec[field]])),
      ) as SeaweedStore['spec']['forProvider'],
      targetNamespace: `${namespacePrefix}${name}`.slice(0, 63).replace(/-+$/, ''),
      // The claim gets a bucket of the store and a user of its own.
      bucket: { name: bucketNameFor(claim), access: 'ReadWrite', ...(deleteObjects !== undefined ? { deleteObjects } : {}) },
      ...(exposure ? { exposure } : {}),
      ...(credentialRotation ? { credentialRotation } : {}),
      reclaimPolicy,
      writeConnectionSecretToRef: { name },
    },
  };
}

export const seaweedStores: Backend<SeaweedStore, SeaweedStoreClass> = {
  managed: kinds.SeaweedStore,
  class: kinds.SeaweedStoreClass,
  native: seaweedStoreKind,
  configure: configureSeaweedStore,
  features: { ...seaweedFeatures, path: ['bucket', 'features'] },
};
