// Buckets in a shared SeaweedFS store: a Bucket claim of a SeaweedBucketClass becomes a managed
// SeaweedBucket, a bucket of the SeaweedStore the class names and a user of its own whose policy
// reaches only that bucket. In the target its object is the user (an S3Identity); its companions
// are the user's keys, policy and bucket (bucket-user.ts), which the operator makes in the store.
import { kinds } from '../../apis/kinds.gen.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { SeaweedBucket, SeaweedBucketClass, SeaweedStore } from './api.ts';
import type { AccessMode, Grantor } from '../../runtime/claims/access.ts';
import { claimLabels, refuseUnlessAllowed, type Claim, type Lookup } from '../../runtime/claims/claim.ts';
import type { ManagedResource } from '../../runtime/managed/types.ts';
import type { KindContext, NativeKind } from '../../runtime/native/kind.ts';
import type { Backend } from '../../runtime/system/backend.ts';
import { S3_ENDPOINT_KEYS } from '../shared/s3-details.ts';
import { bucketNameFor } from '../shared/s3-names.ts';
import { grantSpec, nothingToLend, refuseNotOwner, refuseWiderThanOwn } from '../shared/grants.ts';
import { readyStore } from '../shared/shared-store.ts';
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
import { seaweedfsOperator, S3CredentialsType, S3Identities, S3Policies, S3PolicyBindings, SeaweedBuckets, Seaweeds } from './operator.ts';
import { seaweedEndpoint, storeAccess, type SeaweedStoreAccess } from './store.ts';

const RESOURCE = 'seaweedbuckets.seaweedfs.crossplane.io';
const ownerOf = (mr: SeaweedBucket): string => `${RESOURCE}/${mr.metadata.uid}`;

function bucketUser(mr: SeaweedBucket, name: string, ctx: KindContext): SeaweedUser {
  const f = mr.spec.forProvider;
  return {
    base: name,
    namespace: mr.spec.targetNamespace,
    seaweed: f.store.seaweed,
    iamName: iamNameFor(mr, name),
    bucket: f.bucketName,
    access: f.access ?? 'ReadWrite',
    ownsBucket: f.ownsBucket ?? true,
    deleteObjects: f.deleteObjects ?? false,
    ...rotatingKeys(ctx, ownerOf(mr)),
    ...(f.features ? { features: f.features } : {}),
  };
}

export const seaweedBucketKind: NativeKind<SeaweedBucket> = {
  resource: RESOURCE,
  target: S3Identities,
  operator: seaweedfsOperator,
  desired: (mr, name, ctx) => identityObject(bucketUser(mr, name, ctx)),
  companions: (mr, name, ctx) => userCompanions(bucketUser(mr, name, ctx)),
  companionTypes: USER_TYPES,
  retired: (mr, name) => retiredPolicyObjects(mr.spec.targetNamespace, name),
  // Its operator's objects are undone through the store's Seaweed: the store must not go first.
  undoneThrough: {
    types: [S3CredentialsType, S3Policies, S3PolicyBindings, SeaweedBuckets],
    ref: (mr) => ({ type: Seaweeds, namespace: mr.spec.targetNamespace, name: mr.spec.forProvider.store.seaweed }),
  },
  teardown: (mr, name, ctx) => bucketTeardown(bucketUser(mr, name, ctx), false),
  // Dual-key: a new S3Credentials (and Secret) beside the old, which go when their grace period ends.
  rotation: {
    retiredBy: (mr, name, ctx) => retiredNow(bucketUser(mr, name, ctx), ctx, ownerOf(mr)),
  },
  // Its endpoint is its store's: while that store cannot prove the Service it names, this bucket publishes none either.
  endpointFrom: {
    types: [kinds.SeaweedStore],
    of: (mr) => ({ type: kinds.SeaweedStore, name: mr.spec.forProvider.store.name }),
    keys: S3_ENDPOINT_KEYS,
  },
  // The store's Seaweed, whose presence says whether its operator can still undo the bucket's objects.
  reads: [S3CredentialsType, Seaweeds],

  async inspect({ mr, observed, companions, credentials, upstream }) {
    const f = mr.spec.forProvider;
    const endpoint = bucketEndpoint(mr, upstream as ReadonlyDeep<SeaweedStore> | undefined);
    const { name, namespace } = observed.metadata as { name: string; namespace: string };
    const place = {
      base: name,
      namespace,
      iamName: iamNameFor(mr, name),
      bucket: f.bucketName,
      ownsBucket: f.ownsBucket ?? true,
      lifecycle: Boolean(f.features?.lifecycle),
    };
    const access = userAccess(place, { identity: observed, companions }, { endpoint, credentials });
    const status = (observed.status ?? {}) as { identityName?: string };
    return {
      ...access,
      atProvider: {
        bucket: f.bucketName,
        endpoint,
        ...(status.identityName ? { user: status.identityName } : {}),
        ...(access.connectionDetails.username ? { accessKey: access.connectionDetails.username } : {}),
      },
    };
  },
};

/**
 * A bucket's endpoint: its store's S3 Service, by its full name. The Service is the one of the Seaweed
 * and namespace the bucket was made in (fixed at creation); only the domain comes from its store, as
 * the store publishes it now (its spec's while it publishes none), so a bucket made when endpoints
 * were not fully qualified (its spec still names <seaweed>-s3.<namespace>.svc) publishes the full
 * name too, and every bucket follows its store when the store's domain changes.
 */
export function bucketEndpoint(mr: ReadonlyDeep<SeaweedBucket>, store: ReadonlyDeep<SeaweedStore> | undefined): string {
  const f = mr.spec.forProvider;
  const domain = store
    ? (domainOf(store.status?.atProvider?.endpoint) ?? store.spec.forProvider.clusterDomain)
    : domainOf(f.store.endpoint);
  return seaweedEndpoint({ namespace: mr.spec.targetNamespace, name: f.store.seaweed }, domain);
}

const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The cluster domain an endpoint of a Service names (<service>.<namespace>.svc.<domain>), if it names one. */
function domainOf(endpoint: string | undefined): string | undefined {
  if (!endpoint || !URL.canParse(endpoint)) return undefined;
  const labels = new URL(endpoint).hostname.split('.');
  const domain = labels.slice(3).join('.');
  return labels[2] === 'svc' && domain.length <= 253 && DNS_NAME.test(domain) ? domain : undefined;
}

/** The store a class shares, as it is now: it must exist and be Ready before a bucket is made in it. */
const sharedStore = (lookup: Lookup, namespace: string, ref: SeaweedBucketClass['spec']['store'], who: string): SeaweedStoreAccess =>
  readyStore(lookup, { type: kinds.SeaweedStore, namespace, name: ref.name }, who, (s: SeaweedStore) => storeAccess(s)).access;

export function configureSeaweedBucket(claim: Claim, cls: SeaweedBucketClass, name: string, lookup: Lookup): SeaweedBucket {
  refuseUnlessAllowed({ ...cls, kind: kinds.SeaweedBucketClass.kind }, claim);
  const { store, reclaimPolicy, deleteObjects, credentialRotation } = cls.spec;
  const access = sharedStore(lookup, cls.metadata.namespace!, store, `SeaweedBucketClass ${cls.metadata.namespace}/${cls.metadata.name}`);
  return {
    apiVersion: kinds.SeaweedBucket.apiVersion,
    kind: kinds.SeaweedBucket.kind,
    metadata: { name, labels: claimLabels(claim) },
    spec: {
      forProvider: {
        bucketName: bucketNameFor(claim),
        access: 'ReadWrite',
        ownsBucket: true,
        store: { name: store.name, seaweed: access.seaweed, endpoint: access.endpoint },
        deleteObjects: deleteObjects ?? false,
      },
      // The bucket lives where its store does.
      providerRef: access.providerRef,
      targetNamespace: access.namespace,
      ...(credentialRotation ? { credentialRotation } : {}),
      reclaimPolicy,
      writeConnectionSecretToRef: { name },
    },
  };
}

/** A grant's SeaweedBucket: a user of its own on a bucket it does not own, so deleting it never touches the bucket. */
function grantIn(
  bucket: ManagedResource,
  shared: { store: SeaweedStoreAccess | undefined; storeName: string; bucketName: string | undefined },
  mode: AccessMode,
  name: string,
): SeaweedBucket {
  const { store, storeName, bucketName } = shared;
  if (!store || !bucketName) throw nothingToLend(bucket);
  refuseWiderThanOwn(bucket, mode);
  return {
    apiVersion: kinds.SeaweedBucket.apiVersion,
    kind: kinds.SeaweedBucket.kind,
    metadata: { name },
    spec: {
      forProvider: {
        bucketName,
        access: mode,
        ownsBucket: false,
        store: { name: storeName, seaweed: store.seaweed, endpoint: store.endpoint },
        deleteObjects: false,
      },
      ...grantSpec(bucket, store, name),
    },
  };
}

/** The bucket a grant's SeaweedBucket reaches: its Provider, namespace, Seaweed and bucket name. */
function reaches(grant: ManagedResource): string {
  const { spec } = grant as SeaweedBucket;
  const f = spec.forProvider;
  return JSON.stringify([spec.providerRef?.name ?? '', spec.targetNamespace, f.store.seaweed, f.bucketName]);
}

/** Every SeaweedFS bucket can be shared: a store's own, and one in a shared store. */
const seaweedGrantors: Grantor[] = [
  {
    managed: kinds.SeaweedStore,
    grants: kinds.SeaweedBucket,
    reaches,
    grant: (mr, mode, name) => {
      const store = mr as SeaweedStore;
      return grantIn(mr, { store: storeAccess(store), storeName: mr.metadata.name, bucketName: store.spec.bucket?.name }, mode, name);
    },
  },
  {
    managed: kinds.SeaweedBucket,
    grants: kinds.SeaweedBucket,
    reaches,
    grant: (mr, mode, name) => {
      const { spec } = mr as SeaweedBucket;
      const f = spec.forProvider;
      // A user of a bucket it does not own (another grant) lends nothing: only the bucket's own resource does.
      refuseNotOwner(mr, f.ownsBucket);
      const store = spec.providerRef
        ? { providerRef: spec.providerRef, namespace: spec.targetNamespace, seaweed: f.store.seaweed, endpoint: f.store.endpoint }
        : undefined;
      return grantIn(mr, { store, storeName: f.store.name, bucketName: f.bucketName }, mode, name);
    },
  },
];

export const seaweedBuckets: Backend<SeaweedBucket, SeaweedBucketClass> = {
  managed: kinds.SeaweedBucket,
  class: kinds.SeaweedBucketClass,
  native: seaweedBucketKind,
  configure: configureSeaweedBucket,
  lookups: [kinds.SeaweedStore],
  features: { ...seaweedFeatures, path: ['forProvider', 'features'] },
  grantors: seaweedGrantors,
};
