// The shared-store backend: a Bucket claim of a MinioBucketClass becomes a managed MinioBucket, a
// bucket of the store the class names and a user of its own whose policy reaches only that bucket.
// In the target its object is the user's Secret (keys derived by provider-rook, and the policy); a
// Job there makes the bucket, the user and the policy with the store's root Secret mounted, and
// another removes the user (and the bucket, when empty or deleteObjects says) before deletion.
import { kinds } from '../../apis/kinds.gen.ts';
import type { MinioBucket, MinioBucketClass } from './api.ts';
import type { Backend } from '../../runtime/system/backend.ts';
import type { AccessMode, Grantor } from '../../runtime/claims/access.ts';
import type { ManagedResource } from '../../runtime/managed/types.ts';
import { claimLabels, refuseUnlessAllowed, type Claim, type Lookup } from '../../runtime/claims/claim.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import { Jobs, Secrets, type ResourceType } from '../../kit/kube/resources.ts';
import { secretText } from '../../runtime/providers/credentials.ts';
import type { KindContext, NativeKind } from '../../runtime/native/kind.ts';
import { Reasons } from '../../runtime/reasons.ts';
import { FEATURES } from '../../runtime/claims/features.ts';
import { bucketNameFor } from '../shared/s3-names.ts';
import { grantSpec, nothingToLend, refuseNotOwner, refuseWiderThanOwn } from '../shared/grants.ts';
import { readyStore } from '../shared/shared-store.ts';
import { S3_ENDPOINT_KEYS } from '../shared/s3-details.ts';
import {
  accessJob,
  SUPERSEDED_JOBS,
  LABEL_ADMIN,
  revokeTeardown,
  rotatingKeys,
  userSecret,
  type BucketUser,
  type StoreAccess,
} from '../shared/minio-admin.ts';
import { bucketUserRotation, userAccess } from '../shared/bucket-user.ts';

const RESOURCE = 'miniobuckets.minio.crossplane.io';

const ownerOf = (mr: MinioBucket): string => `${RESOURCE}/${mr.metadata.uid}`;

function bucketUser(mr: MinioBucket, name: string, ctx: KindContext): BucketUser {
  const f = mr.spec.forProvider;
  return {
    base: name,
    userSecret: name,
    namespace: mr.spec.targetNamespace,
    endpoint: f.store.endpoint,
    root: f.store.rootSecret,
    bucket: f.bucketName,
    access: f.access ?? 'ReadWrite',
    ownsBucket: f.ownsBucket ?? true,
    ...rotatingKeys(ctx, ownerOf(mr)),
    ...(f.ownsBucket !== false && f.features ? { features: f.features } : {}),
    ...(f.image ? { image: f.image } : {}),
  };
}

export const minioBucketKind: NativeKind<MinioBucket> = {
  resource: RESOURCE,
  target: Secrets,
  desired: (mr, name, ctx) => userSecret(bucketUser(mr, name, ctx)),
  companions: (mr, name, ctx) => [accessJob(bucketUser(mr, name, ctx))],
  companionTypes: [Jobs],
  // The user is in the shared store, not in the Secret that is this kind's object: revoked also once that Secret is gone.
  teardown: (mr, name, ctx) => ({
    ...revokeTeardown(bucketUser(mr, name, ctx), mr.spec.forProvider.deleteObjects ?? false),
    runsWithoutTarget: true,
  }),
  superseded: SUPERSEDED_JOBS,
  rotation: bucketUserRotation(bucketUser, ownerOf),
  // Its endpoint is its store's: while that store cannot prove the Service it names, this bucket publishes none either.
  endpointFrom: {
    types: [kinds.ObjectStore, kinds.Tenant],
    of: (mr) => ({
      type: mr.spec.forProvider.store.kind === 'Tenant' ? kinds.Tenant : kinds.ObjectStore,
      name: mr.spec.forProvider.store.name,
    }),
    keys: S3_ENDPOINT_KEYS,
  },

  async inspect({ mr, observed, companions, credentials }) {
    const f = mr.spec.forProvider;
    const where = { bucket: f.bucketName, namespace: mr.spec.targetNamespace, endpoint: f.store.endpoint };
    const access = userAccess(companions[0], observed, where, credentials);
    const user = secretText((observed as { data?: Record<string, string> }).data).accessKey;
    return { ...access, atProvider: { bucket: f.bucketName, endpoint: f.store.endpoint, ...(user ? { user } : {}) } };
  },
};

/**
 * How buckets reach each kind of MinIO store: given by the store backends where the backends are
 * listed (backends/index.ts), so this backend imports none of them.
 */
export interface MinioStores {
  ObjectStore(store: ManagedResource): StoreAccess | undefined;
  Tenant(store: ManagedResource): StoreAccess | undefined;
}

/** The store a class shares, as it is now: it must exist and be Ready before a bucket is made in it. */
function sharedStore(
  stores: MinioStores,
  lookup: Lookup,
  namespace: string,
  ref: MinioBucketClass['spec']['store'],
  who: string,
): StoreAccess {
  const type = ref.kind === 'Tenant' ? kinds.Tenant : kinds.ObjectStore;
  const accessOf = (s: ManagedResource) => (ref.kind === 'Tenant' ? stores.Tenant(s) : stores.ObjectStore(s));
  const { store, access } = readyStore(
    lookup,
    { type, namespace, name: ref.name },
    who,
    accessOf,
    'it made no endpoint Service for it, so no bucket is made in it',
  );
  const own = (store.spec as { targetNamespace?: string }).targetNamespace;
  if (ref.kind === 'ObjectStore' && access.namespace !== own) {
    throw new ReasonedError(
      Reasons.SharedStoreNotReady,
      `${ref.kind} ${namespace}/${ref.name} keeps its access keys in namespace ${access.namespace}, not its own (${own}): buckets can be made only in a store whose keys are beside it`,
    );
  }
  return access;
}

export const configureMinioBucket =
  (stores: MinioStores) =>
  (claim: Claim, cls: MinioBucketClass, name: string, lookup: Lookup): MinioBucket => {
    refuseUnlessAllowed({ ...cls, kind: kinds.MinioBucketClass.kind }, claim);
    const { store, reclaimPolicy, deleteObjects, image, credentialRotation } = cls.spec;
    const access = sharedStore(
      stores,
      lookup,
      cls.metadata.namespace!,
      store,
      `MinioBucketClass ${cls.metadata.namespace}/${cls.metadata.name}`,
    );
    return {
      apiVersion: kinds.MinioBucket.apiVersion,
      kind: kinds.MinioBucket.kind,
      metadata: { name, labels: { ...claimLabels(claim), [LABEL_ADMIN]: 'bucket' } },
      spec: {
        forProvider: {
          bucketName: bucketNameFor(claim),
          access: 'ReadWrite',
          ownsBucket: true,
          store: { kind: store.kind, name: store.name, endpoint: access.endpoint, rootSecret: access.rootSecret },
          deleteObjects: deleteObjects ?? false,
          ...(image ? { image } : {}),
        },
        // The bucket lives where its store does.
        providerRef: access.providerRef,
        targetNamespace: access.namespace,
        ...(credentialRotation ? { credentialRotation } : {}),
        reclaimPolicy,
        writeConnectionSecretToRef: { name },
      },
    };
  };

/** The backend of buckets in shared MinIO stores, reached as `stores` says. */
export const minioBuckets = (stores: MinioStores): Backend<MinioBucket, MinioBucketClass> => ({
  managed: kinds.MinioBucket,
  class: kinds.MinioBucketClass,
  native: minioBucketKind,
  configure: configureMinioBucket(stores),
  lookups: [kinds.ObjectStore, kinds.Tenant],
  features: {
    supported: FEATURES,
    fixed: { objectLock: 'MinIO turns object lock on only when it makes a bucket' },
    path: ['forProvider', 'features'],
  },
  grantors: minioGrantors(stores),
});

/** A grant's MinioBucket: a user of its own on a bucket it does not own, so deleting it never touches the bucket. */
function grantIn(
  bucket: ManagedResource,
  shared: { store: StoreAccess | undefined; storeRef: { kind: 'ObjectStore' | 'Tenant'; name: string }; bucketName: string | undefined },
  mode: AccessMode,
  name: string,
): MinioBucket {
  const { store, storeRef, bucketName } = shared;
  if (!store || !bucketName) throw nothingToLend(bucket);
  refuseWiderThanOwn(bucket, mode);
  return {
    apiVersion: kinds.MinioBucket.apiVersion,
    kind: kinds.MinioBucket.kind,
    metadata: { name, labels: { [LABEL_ADMIN]: 'grant' } },
    spec: {
      forProvider: {
        bucketName,
        access: mode,
        ownsBucket: false,
        store: { ...storeRef, endpoint: store.endpoint, rootSecret: store.rootSecret },
        deleteObjects: false,
      },
      ...grantSpec(bucket, store, name),
    },
  };
}

/** The bucket a grant's MinioBucket reaches: its Provider, namespace, store and bucket name. */
function reaches(grant: ManagedResource): string {
  const { spec } = grant as MinioBucket;
  const f = spec.forProvider;
  return JSON.stringify([spec.providerRef?.name ?? '', spec.targetNamespace, f.store.kind, f.store.name, f.bucketName]);
}

/** A store's own bucket, lent: a user of its own on it, in that store. */
function storeGrantor(
  managed: ResourceType,
  kind: 'ObjectStore' | 'Tenant',
  access: (mr: ManagedResource) => StoreAccess | undefined,
): Grantor {
  return {
    managed,
    grants: kinds.MinioBucket,
    reaches,
    grant: (mr, mode, name) => {
      const bucketName = (mr.spec as { bucket?: { name?: string } }).bucket?.name;
      return grantIn(mr, { store: access(mr), storeRef: { kind, name: mr.metadata.name }, bucketName }, mode, name);
    },
  };
}

/** Every MinIO bucket can be shared: a dedicated store's, a Tenant's, and one in a shared store. */
export const minioGrantors = (stores: MinioStores): Grantor[] => [
  storeGrantor(kinds.ObjectStore, 'ObjectStore', (mr) => stores.ObjectStore(mr)),
  storeGrantor(kinds.Tenant, 'Tenant', (mr) => stores.Tenant(mr)),
  {
    managed: kinds.MinioBucket,
    grants: kinds.MinioBucket,
    reaches,
    grant: (mr, mode, name) => {
      const f = (mr as MinioBucket).spec.forProvider;
      // A user of a bucket it does not own (another grant) lends nothing: only the bucket's own resource does.
      refuseNotOwner(mr, f.ownsBucket);
      const store = {
        providerRef: mr.spec.providerRef!,
        namespace: (mr as MinioBucket).spec.targetNamespace,
        endpoint: f.store.endpoint,
        rootSecret: f.store.rootSecret,
      };
      const storeRef = { kind: f.store.kind, name: f.store.name };
      return grantIn(mr, { store: mr.spec.providerRef ? store : undefined, storeRef, bucketName: f.bucketName }, mode, name);
    },
  },
];
