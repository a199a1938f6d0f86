// A bucket and a user of its own in a Seaweed, as the SeaweedFS operator's kinds say them: a Bucket,
// an S3Identity (the user), its keys in a Secret provider-rook writes and an S3Credentials that
// registers them, and an S3Policy bound to the user that reaches only that bucket. The operator
// makes them in the store; provider-rook holds no credential of the store at all. Both SeaweedFS
// kinds (a store with a bucket of its own, a bucket in a shared store) use it.
import { createHash } from 'node:crypto';
import { getCondition } from '../../kit/conditions.ts';
import { Secrets, type ObjectRef } from '../../kit/kube/resources.ts';
import type { AccessMode } from '../../runtime/claims/access.ts';
import { FEATURES, type BucketFeatures, type FeatureSupport } from '../../runtime/claims/features.ts';
import type { Companion, KindContext, TargetObject, Teardown } from '../../runtime/native/kind.ts';
import { policyDocument } from '../shared/s3-policy.ts';
import { BucketLifecyclePolicies, S3CredentialsType, S3Identities, S3Policies, S3PolicyBindings, SeaweedBuckets } from './operator.ts';

export interface SeaweedUser {
  /** The name of its objects in the target namespace. */
  base: string;
  namespace: string;
  /** The Seaweed they belong to, in the same namespace. */
  seaweed: string;
  /** The user's and its policy's name in the store, where names are global (see iamNameFor). */
  iamName: string;
  bucket: string;
  access: AccessMode;
  /** The bucket is this user's to make and, on deletion, to remove; a grant's user only reaches one that exists. */
  ownsBucket: boolean;
  /** Whether removing the bucket may take its objects with it: the operator deletes a bucket with everything in it. */
  deleteObjects: boolean;
  keys: { accessKey: string; secretKey: string };
  /** The generation of `keys` (0 until rotated). */
  generation: number;
  /** Older generations whose keys still work (a rotation's grace period), each with its keys. */
  older: { generation: number; keys: SeaweedUser['keys'] }[];
  /** The bucket's features (its owner's only). */
  features?: BucketFeatures;
}

/**
 * The user's name in the store: unique per managed resource, since every S3Identity of a Seaweed
 * shares one namespace of names whatever Kubernetes namespace it is in, and a later claimant of a
 * taken name is refused. A namespace has no dots, so "<namespace>.<name>" never collides; longer
 * than a policy name may be (128), it is a digest.
 */
export function iamNameFor(mr: { metadata: { namespace?: string } }, name: string): string {
  const readable = `rook.${mr.metadata.namespace ?? ''}.${name}`;
  return readable.length <= 128 ? readable : `rook.${createHash('sha256').update(readable).digest('hex').slice(0, 40)}`;
}

/**
 * The user's policy's name in the store: its user's, with underscores for dots. SeaweedFS takes only
 * `[A-Za-z0-9_-]` in a policy name (its filer refuses to save, read or delete any other), where a
 * user's may hold dots. A namespace has no dots or underscores, and a Kubernetes name no
 * underscores, so this stays one name per user.
 */
export const policyNameOf = (u: Pick<SeaweedUser, 'iamName'>): string => u.iamName.replaceAll('.', '_');

/**
 * The S3Policy and its S3PolicyBinding are named `<base>-policy`. provider-rook 0.2.0 made them as
 * `<base>`, with the user's name for the policy's, which SeaweedFS refuses; the name an S3Policy gives
 * is fixed once it is made (the operator's rule), and what a binding names too (our admission policy),
 * so new ones are made under a new name and those go (NativeKind.retired).
 */
const policyObjectName = (base: string): string => `${base}-policy`;

/** The S3Policy and S3PolicyBinding provider-rook 0.2.0 made for the user at `base`: no longer wanted. */
export const retiredPolicyObjects = (namespace: string, base: string): ObjectRef[] => [
  { type: S3Policies, namespace, name: base },
  { type: S3PolicyBindings, namespace, name: base },
];

/** The user's keys of one generation, derived for its owner (see KindContext.credential): the same on every pass, unknowable outside provider-rook. */
export function seaweedKeys(ctx: KindContext, owner: string, generation = ctx.credentials.generation): SeaweedUser['keys'] {
  const purpose = generation === 0 ? `seaweedfs-user/${owner}` : `seaweedfs-user/${owner}/g${generation}`;
  return { accessKey: ctx.credential(`${purpose}/access-key`, 20), secretKey: ctx.credential(`${purpose}/secret-key`, 40) };
}

/**
 * The user's keys as a rotation has them (ctx.credentials): the current generation's, and those of
 * older ones still in their grace period (past it, they are retired: retiringCompanions).
 */
export function rotatingKeys(ctx: KindContext, owner: string): Pick<SeaweedUser, 'keys' | 'generation' | 'older'> {
  const { generation, outstanding, due } = ctx.credentials;
  const older = outstanding.filter((g) => !due.includes(g)).map((g) => ({ generation: g, keys: seaweedKeys(ctx, owner, g) }));
  return { keys: seaweedKeys(ctx, owner), generation, older };
}

// Each generation has a Secret and an S3Credentials of its own, the first ones named as before any rotation.
const suffix = (g: number): string => (g === 0 ? '' : `-g${g}`);
const keysSecret = (u: Pick<SeaweedUser, 'base'>, g: number): string => `${u.base.slice(0, 50).replace(/[-.]+$/, '')}-keys${suffix(g)}`;
const credentialsName = (u: Pick<SeaweedUser, 'base'>, g: number): string =>
  g === 0 ? u.base : `${u.base.slice(0, 52).replace(/[-.]+$/, '')}${suffix(g)}`;
const seaweedRef = (u: SeaweedUser) => ({ name: u.seaweed });
const meta = (u: SeaweedUser, type: { apiVersion: string; kind: string }, name = u.base) => ({
  apiVersion: type.apiVersion,
  kind: type.kind,
  metadata: { name, namespace: u.namespace },
});

/** The S3Identity: the user itself (no keys of its own). */
export function identityObject(u: SeaweedUser): TargetObject {
  return { ...meta(u, S3Identities), spec: { seaweedRef: seaweedRef(u), name: u.iamName, reclaimPolicy: 'Delete' } };
}

/** What grants the user access to the store: it goes with the resource, even when the store is kept. */
const ACCESS_TYPES = new Set([S3Identities, S3CredentialsType, S3Policies, S3PolicyBindings]);

const companion = (u: SeaweedUser, type: Companion['type'], purpose: string, build: () => TargetObject, name = u.base): Companion => ({
  type,
  name,
  namespace: u.namespace,
  purpose,
  build,
  ...(ACCESS_TYPES.has(type) ? { grantsAccess: true } : {}),
});

/**
 * What the user needs besides its S3Identity, in this order: its keys Secret, the S3Credentials that
 * registers them, its policy and the binding to it, the bucket and its lifecycle rules when it is
 * the user's own, then the keys of older generations still in their grace period (userAccess reads
 * them in this order).
 */
export function userCompanions(u: SeaweedUser): Companion[] {
  return [
    ...generationCompanions(u, u.generation, u.keys),
    companion(
      u,
      S3Policies,
      "bucket user's S3Policy",
      () => ({
        ...meta(u, S3Policies, policyObjectName(u.base)),
        spec: {
          seaweedRef: seaweedRef(u),
          name: policyNameOf(u),
          policyDocument: JSON.stringify(policyDocument(u.bucket, u.access, { features: true })),
          reclaimPolicy: 'Delete',
        },
      }),
      policyObjectName(u.base),
    ),
    companion(
      u,
      S3PolicyBindings,
      "bucket user's S3PolicyBinding",
      () => ({
        ...meta(u, S3PolicyBindings, policyObjectName(u.base)),
        spec: {
          seaweedRef: seaweedRef(u),
          policyRef: { name: policyObjectName(u.base) },
          subjects: [{ kind: 'S3Identity', name: u.base }],
          reclaimPolicy: 'Delete',
        },
      }),
      policyObjectName(u.base),
    ),
    ...(u.ownsBucket
      ? [
          companion(u, SeaweedBuckets, 'Bucket', () => ({
            ...meta(u, SeaweedBuckets),
            // The operator's s3.bucket.delete takes every object with the bucket: Delete only when the class says objects may go.
            spec: {
              name: u.bucket,
              clusterRef: seaweedRef(u),
              reclaimPolicy: u.deleteObjects ? 'Delete' : 'Retain',
              ...bucketSpec(u.features),
            },
          })),
          ...(u.features?.lifecycle ? [lifecycleCompanion(u, u.features.lifecycle)] : []),
        ]
      : []),
    // Keys of older generations keep working through their grace period: apps may still hold them.
    ...u.older.flatMap((o) => generationCompanions(u, o.generation, o.keys)),
  ];
}

/** One generation's keys: the Secret provider-rook writes them to, and the S3Credentials that registers them. */
function generationCompanions(u: SeaweedUser, g: number, keys: SeaweedUser['keys']): Companion[] {
  const secret = keysSecret(u, g);
  return [
    {
      ...companion(
        u,
        Secrets,
        `bucket user's keys Secret (generation ${g})`,
        () => ({
          ...meta(u, { apiVersion: 'v1', kind: 'Secret' }, secret),
          type: 'Opaque',
          data: { accessKey: Buffer.from(keys.accessKey).toString('base64'), secretKey: Buffer.from(keys.secretKey).toString('base64') },
        }),
        secret,
      ),
      grantsAccess: true,
    },
    // A Secret that holds both keys is registered as it is: the keys are provider-rook's, never the operator's.
    companion(
      u,
      S3CredentialsType,
      `bucket user's S3Credentials (generation ${g})`,
      () => ({
        ...meta(u, S3CredentialsType, credentialsName(u, g)),
        spec: { seaweedRef: seaweedRef(u), identityRef: { name: u.base }, secretRef: { name: secret }, reclaimPolicy: 'Delete' },
      }),
      credentialsName(u, g),
    ),
  ];
}

/**
 * The companions of generations past their grace period, in the order they go: the S3Credentials
 * first (the operator revokes its key), its Secret once it is gone (a Secret missing under a live
 * S3Credentials would have the operator make keys of its own).
 */
export function retiringCompanions(u: SeaweedUser, due: number[], keys: (g: number) => SeaweedUser['keys']): Companion[] {
  return due.flatMap((g) => generationCompanions(u, g, keys(g)).reverse());
}

/** What a rotation retires of the user of `owner` now: the S3Credentials and Secret of each generation whose grace period ended. */
export const retiredNow = (u: SeaweedUser, ctx: KindContext, owner: string): Companion[] =>
  retiringCompanions(u, ctx.credentials.due, (g) => seaweedKeys(ctx, owner, g));

/** What the operator's kinds carry of the bucket features: all but a default retention, which its Bucket has no field for. */
export const seaweedFeatures: Pick<FeatureSupport, 'supported' | 'lacks'> = {
  supported: FEATURES.filter((f) => f !== 'defaultRetention'),
  lacks: {
    defaultRetention: "the SeaweedFS operator's Bucket has no default retention; an app sets a retention on each version it writes",
  },
};

/** The Bucket's versioning, object lock and quota, as the operator takes them. */
function bucketSpec(f: BucketFeatures | undefined): Record<string, unknown> {
  return {
    ...(f?.versioning ? { versioning: f.versioning } : {}),
    ...(f?.objectLock ? { objectLock: true } : {}),
    ...(f?.quota ? { quota: { size: f.quota.size, enforce: true } } : {}),
  };
}

/** The bucket's lifecycle rules, one BucketLifecyclePolicy (the operator lets one policy own a bucket's rules). */
function lifecycleCompanion(u: SeaweedUser, lifecycle: NonNullable<BucketFeatures['lifecycle']>): Companion {
  return companion(u, BucketLifecyclePolicies, "bucket's lifecycle rules", () => ({
    ...meta(u, BucketLifecyclePolicies),
    spec: {
      bucketRef: { name: u.base },
      reclaimPolicy: 'Delete',
      rules: lifecycle.rules.map((r) => ({
        id: r.id,
        status: 'Enabled',
        ...(r.prefix !== undefined ? { prefix: r.prefix } : {}),
        ...(r.expirationDays ? { expiration: { days: r.expirationDays } } : {}),
        ...(r.noncurrentVersionExpirationDays
          ? { noncurrentVersionExpiration: { noncurrentDays: r.noncurrentVersionExpirationDays } }
          : {}),
      })),
    },
  }));
}

/**
 * Before the user goes: whether its bucket may go with everything in it. Nothing provider-rook can
 * read proves a bucket empty (the operator counts objects every few minutes at best), so unless
 * deleteObjects says objects may go, the bucket is kept (its Bucket is Retain, the operator leaves
 * it) and an Event says so; with `retainWhenKept` (a store of its own) the whole store is kept.
 */
export function bucketTeardown(u: SeaweedUser, retainWhenKept: boolean): Teardown | undefined {
  const bucket = userCompanions(u).find((c) => c.type === SeaweedBuckets);
  if (!bucket) return undefined;
  // Under object lock the operator's delete of the bucket is refused while any version is locked
  // (DeleteBlockedByRetention), and retried until the longest retention ends, then takes everything:
  // such a bucket is kept, as MinIO's is, whatever deleteObjects says.
  const kept = u.features?.objectLock
    ? `bucket ${u.bucket} has object lock: its locked versions cannot be deleted before their retention ends, so it is kept in the store with them`
    : u.deleteObjects
      ? undefined
      : `bucket ${u.bucket} may hold objects and deleteObjects is off, so it is kept in the store with them`;
  return {
    object: bucket,
    retainWhenKept,
    // Never made for a teardown: without its Bucket there is nothing of it to keep or remove.
    onlyAfter: { ref: bucket, reached: () => true },
    // The operator acts on the reclaim policy the Bucket says when it goes: a bucket to keep says Retain first.
    prepare: (observed) =>
      kept && (observed.spec as { reclaimPolicy?: string } | undefined)?.reclaimPolicy !== 'Retain'
        ? { spec: { reclaimPolicy: 'Retain' } }
        : undefined,
    // A bucket its Bucket refused as one already there (BucketAlreadyExists: not made nor adopted by
    // it) is left by the operator whatever the reclaim policy says: kept, and said so, not reported deleted.
    outcome: (have) => {
      // Said in Ready's reason, and kept by the operator in a condition of its own while later passes fail otherwise.
      const { bucketName, conditions } = (have.status ?? {}) as { bucketName?: string; conditions?: { type: string; reason?: string }[] };
      const refused =
        !bucketName &&
        (getCondition(conditions, 'Ready')?.reason === 'BucketAlreadyExists' ||
          (getCondition(conditions, 'BucketAlreadyExists') as { status?: string } | undefined)?.status === 'True');
      const left = refused
        ? (kept ?? `bucket ${u.bucket} was already in the store and its Bucket never took it as its own, so the operator leaves it there`)
        : kept;
      return left ? { done: true, kept: left } : { done: true };
    },
  };
}

/** The companions' types, for the leak sweeper and the target's RBAC. */
export const USER_TYPES = [Secrets, S3CredentialsType, S3Policies, S3PolicyBindings, SeaweedBuckets, BucketLifecyclePolicies];
