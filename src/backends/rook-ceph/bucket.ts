// The Rook Ceph backend: a managed CephBucket becomes one objectbucket.io ObjectBucketClaim, which
// Rook's bucket provisioner serves from a CephObjectStore the platform team runs. It makes no
// companions: the provisioner writes the keys (a Secret) and the address (a ConfigMap) beside the
// claim, and those are read only when they are the provisioner's for this very claim.
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { fileURLToPath } from 'node:url';
import { kinds } from '../../apis/kinds.gen.ts';
import type { CephBucket, CephBucketClass } from './api.ts';
import type { Backend } from '../../runtime/system/backend.ts';
import { claimLabels, refuseUnlessAllowed, type Claim } from '../../runtime/claims/claim.ts';
import { withoutNulls } from '../../kit/json.ts';
import { quantityBytes } from '../../kit/quantity.ts';
import { quotaBytes, type BucketFeatures } from '../../runtime/claims/features.ts';
import { Secrets, type ResourceType } from '../../kit/kube/resources.ts';
import { secretText } from '../../runtime/providers/credentials.ts';
import type { NativeKind, TargetObject } from '../../runtime/native/kind.ts';
import { bundleFromDirectory } from '../../runtime/operators/operator.ts';
import { s3ConnectionDetails } from '../shared/s3-details.ts';
import { keyOf } from '../../kit/controller/result.ts';

/** The provisioner's record of a claim's bucket: cluster-scoped, so no tenant of a namespace writes it. */
export const ObjectBuckets: ResourceType = {
  apiVersion: 'objectbucket.io/v1alpha1',
  kind: 'ObjectBucket',
  plural: 'objectbuckets',
  namespaced: false,
};

interface ObjectBucket {
  metadata: { name: string };
  spec?: {
    claimRef?: { namespace?: string; name?: string; uid?: string };
    endpoint?: { bucketHost?: string; bucketPort?: number; bucketName?: string; region?: string };
  };
}

const claimKeyOf = (o: ReadonlyDeep<TargetObject>): string | undefined => {
  const ref = (o as ObjectBucket).spec?.claimRef;
  return ref?.namespace && ref.name ? keyOf({ namespace: ref.namespace, name: ref.name }) : undefined;
};

export const ObjectBucketClaims: ResourceType = {
  apiVersion: 'objectbucket.io/v1alpha1',
  kind: 'ObjectBucketClaim',
  plural: 'objectbucketclaims',
  namespaced: true,
};

/** Rook Ceph's operator, which runs the bucket provisioner (config/operators/rook-ceph). */
export const rookCephOperator = bundleFromDirectory(fileURLToPath(new URL('../../../config/operators/rook-ceph', import.meta.url)), {
  name: 'rook-ceph',
  description: 'Rook Ceph operator',
  crdName: 'objectbucketclaims.objectbucket.io',
  deploymentName: 'rook-ceph-operator',
  defaultNamespace: 'rook-ceph',
  defaultImage: 'rook/ceph:v1.17.0',
});

type Written = TargetObject & { data?: Record<string, string> };

export const cephBucket: NativeKind<CephBucket> = {
  resource: 'cephbuckets.ceph.rook.crossplane.io',
  target: ObjectBucketClaims,
  operator: rookCephOperator,
  // Rook's bucket provisioner makes the claim's Ceph user and keys once, and rotates nothing.
  cannotRotate:
    "Rook makes an ObjectBucketClaim's keys (a Ceph user of its own) when it provisions the bucket and cannot rotate them; for new keys, make a new claim",

  desired(mr, name) {
    const { storageClassName, bucketName, features } = mr.spec.forProvider;
    const additionalConfig = withQuota(mr.spec.forProvider.additionalConfig, features?.quota?.size);
    return {
      apiVersion: ObjectBucketClaims.apiVersion,
      kind: ObjectBucketClaims.kind,
      metadata: { name, namespace: mr.spec.targetNamespace },
      // The provisioner fills in spec.bucketName (when generated) and spec.objectBucketName: never ours.
      spec: {
        storageClassName,
        ...(bucketName ? { bucketName } : { generateBucketName: name }),
        ...(additionalConfig ? { additionalConfig } : {}),
      },
    };
  },

  fixedAtCreation: ['.spec.storageClassName', '.spec.bucketName'],
  reads: [Secrets, ObjectBuckets],
  // lib-bucket-provisioner labels what it writes for a claim (its Secret beside the claim, and the
  // cluster-scoped ObjectBucket that names it) with bucket-provisioner: readiness arrives through
  // them, from the cache.
  related: [
    { type: Secrets, labelSelector: 'bucket-provisioner', targetKey: (o) => keyOf(o.metadata) },
    { type: ObjectBuckets, labelSelector: 'bucket-provisioner', targetKey: (o) => claimKeyOf(o), keep: ['spec'] },
  ],

  async inspect({ read, observed, signal }) {
    const { name, namespace, uid } = observed.metadata;
    const phase = (observed.status as { phase?: string } | undefined)?.phase;
    const atProvider = { namespace, name, ...(phase ? { phase } : {}) };
    if (phase !== 'Bound') {
      return {
        ready: false,
        atProvider,
        message: phase
          ? `ObjectBucketClaim is ${phase === 'Pending' ? 'Pending' : 'not Bound'}`
          : "not yet seen by a bucket provisioner: is the StorageClass Rook's, and is Rook running?",
      };
    }
    // Where the bucket is comes from the ObjectBucket the claim names, which must name the claim back
    // (by uid): it is cluster-scoped, so a tenant of the claim's namespace cannot write it, as it can
    // the provisioner's ConfigMap. The keys are only in the Secret beside the claim (Rook writes them
    // nowhere else), used only when the provisioner wrote it for this very claim.
    const obName = (observed.spec as { objectBucketName?: string } | undefined)?.objectBucketName;
    const [secret, ob] = await Promise.all([
      read.get<Written>(Secrets, { namespace, name }, signal),
      obName ? read.get<ObjectBucket & TargetObject>(ObjectBuckets, { name: obName }, signal) : undefined,
    ]);
    const forThisClaim = secret?.metadata.ownerReferences?.some((r) => r.controller && r.uid === uid) ?? false;
    if (!ob || ob.spec?.claimRef?.uid !== uid || !secret || !forThisClaim) {
      return { ready: false, atProvider, message: "waiting for the provisioner's ObjectBucket and Secret for this claim" };
    }
    const keys = secretText(secret.data);
    const { bucketHost, bucketPort, bucketName, region } = ob.spec?.endpoint ?? {};
    const port = String(bucketPort || 80);
    const endpoint = bucketHost ? `${port === '443' ? 'https' : 'http'}://${bucketHost}:${port}` : undefined;
    return {
      ready: Boolean(endpoint && keys.AWS_ACCESS_KEY_ID && keys.AWS_SECRET_ACCESS_KEY),
      message: endpoint ? undefined : `ObjectBucket ${obName} has no spec.endpoint.bucketHost`,
      connectionDetails: endpoint
        ? s3ConnectionDetails({
            endpoint,
            accessKey: keys.AWS_ACCESS_KEY_ID,
            secretKey: keys.AWS_SECRET_ACCESS_KEY,
            bucket: bucketName,
            region,
          })
        : {},
      atProvider: withoutNulls({ ...atProvider, bucketName, endpoint }),
    };
  },
};

/** A claim's bucket, from its class. */
export function configureCephBucket(claim: Claim, cls: CephBucketClass, name: string): CephBucket {
  refuseUnlessAllowed({ ...cls, kind: kinds.CephBucketClass.kind }, claim);
  const { storageClassName, additionalConfig, reclaimPolicy, targetNamespace } = cls.spec;
  return {
    apiVersion: kinds.CephBucket.apiVersion,
    kind: kinds.CephBucket.kind,
    metadata: { name, labels: claimLabels(claim) },
    spec: {
      forProvider: withoutNulls({ storageClassName, additionalConfig }) as CephBucket['spec']['forProvider'],
      targetNamespace,
      reclaimPolicy,
      writeConnectionSecretToRef: { name },
    },
  };
}

/**
 * The claim's quota as Rook takes it (additionalConfig.maxSize, a quota on the claim's own user, who
 * has this one bucket), never above the class's own maxSize: the smaller holds.
 */
function withQuota(config: CephBucket['spec']['forProvider']['additionalConfig'], quota: string | undefined) {
  if (!quota) return config;
  const classMax = config?.maxSize !== undefined ? quantityBytes(config.maxSize) : undefined;
  const asked = quantityBytes(quota);
  return { ...config, maxSize: classMax !== undefined && asked !== undefined && classMax < asked ? config!.maxSize! : quota };
}

/** A quota above the class's own additionalConfig.maxSize is refused, naming both. */
function beyondClassMaxSize(cls: unknown, features: BucketFeatures): string | undefined {
  const c = cls as CephBucketClass;
  const max = c.spec?.additionalConfig?.maxSize;
  const quota = features.quota?.size;
  if (!max || !quota) return undefined;
  const limit = quantityBytes(max);
  if (limit === undefined || quotaBytes(quota) > limit)
    return `spec.features.quota.size: ${quota} is more than class CephBucketClass ${c.metadata.namespace}/${c.metadata.name} allows (additionalConfig.maxSize ${max})`;
  return undefined;
}

export const rookCeph: Backend<CephBucket, CephBucketClass> = {
  managed: kinds.CephBucket,
  class: kinds.CephBucketClass,
  native: cephBucket,
  configure: configureCephBucket,
  // Rook's claims take a quota (additionalConfig.maxSize); versioning, object lock and lifecycle rules are not among what it allows by default.
  features: {
    supported: ['quota'],
    lacks: {
      versioning: "Rook's ObjectBucketClaim has no versioning",
      objectLock: "Rook's ObjectBucketClaim has no object lock",
      defaultRetention: "Rook's ObjectBucketClaim has no object lock",
      lifecycle:
        'Rook takes bucketLifecycle only when its operator allows it (ROOK_OBC_ALLOW_ADDITIONAL_CONFIG_FIELDS), which provider-rook cannot see',
    },
    path: ['forProvider', 'features'],
    beyond: beyondClassMaxSize,
  },
};
