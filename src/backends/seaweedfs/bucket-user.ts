// A bucket and a user of its own in a Seaweed, as the SeaweedFS operator's kinds say them: a Bucket,
// an S3Identity (the user), its keys in a Secret provider-rook writes and an S3Credentials that
// registers them, and an S3Policy bound to the user that reaches only that bucket. The operator
// makes them in the store; provider-rook holds no credential of the store at all. Both SeaweedFS
// kinds (a store with a bucket of its own, a bucket in a shared store) use it.
import { createHash } from 'node:crypto';
import { ReasonedError } from '../../kit/conditions.ts';
import { Secrets } from '../../kit/kube/resources.ts';
import type { AccessMode } from '../../runtime/claims/access.ts';
import type { BucketFeatures } from '../../runtime/claims/features.ts';
import type { ConnectionDetails } from '../../runtime/managed/types.ts';
import type { Companion, KindContext, TargetObject, Teardown } from '../../runtime/native/kind.ts';
import { secretText } from '../../runtime/providers/credentials.ts';
import { Reasons } from '../../runtime/reasons.ts';
import { s3ConnectionDetails } from '../shared/s3-details.ts';
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

/** The user's keys, derived for its owner (see KindContext.credential): the same on every pass, unknowable outside provider-rook. */
export function seaweedKeys(ctx: KindContext, owner: string): SeaweedUser['keys'] {
  return {
    accessKey: ctx.credential(`seaweedfs-user/${owner}/access-key`, 20),
    secretKey: ctx.credential(`seaweedfs-user/${owner}/secret-key`, 40),
  };
}

const keysSecret = (u: SeaweedUser): string => `${u.base.slice(0, 58).replace(/[-.]+$/, '')}-keys`;
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

const companion = (u: SeaweedUser, type: Companion['type'], purpose: string, build: () => TargetObject, name = u.base): Companion => ({
  type,
  name,
  namespace: u.namespace,
  purpose,
  build,
});

/**
 * What the user needs besides its S3Identity, in this order: its keys Secret, the S3Credentials that
 * registers them, its policy and the binding to it, then the bucket when it is the user's own.
 */
export function userCompanions(u: SeaweedUser): Companion[] {
  const secret = keysSecret(u);
  return [
    companion(
      u,
      Secrets,
      "bucket user's keys Secret",
      () => ({
        ...meta(u, { apiVersion: 'v1', kind: 'Secret' }, secret),
        type: 'Opaque',
        data: { accessKey: Buffer.from(u.keys.accessKey).toString('base64'), secretKey: Buffer.from(u.keys.secretKey).toString('base64') },
      }),
      secret,
    ),
    // A Secret that holds both keys is registered as it is: the keys are provider-rook's, never the operator's.
    companion(u, S3CredentialsType, "bucket user's S3Credentials", () => ({
      ...meta(u, S3CredentialsType),
      spec: { seaweedRef: seaweedRef(u), identityRef: { name: u.base }, secretRef: { name: secret }, reclaimPolicy: 'Delete' },
    })),
    companion(u, S3Policies, "bucket user's S3Policy", () => ({
      ...meta(u, S3Policies),
      spec: {
        seaweedRef: seaweedRef(u),
        name: u.iamName,
        policyDocument: JSON.stringify(policyDocument(u.bucket, u.access, { features: true })),
        reclaimPolicy: 'Delete',
      },
    })),
    companion(u, S3PolicyBindings, "bucket user's S3PolicyBinding", () => ({
      ...meta(u, S3PolicyBindings),
      spec: {
        seaweedRef: seaweedRef(u),
        policyRef: { name: u.base },
        subjects: [{ kind: 'S3Identity', name: u.base }],
        reclaimPolicy: 'Delete',
      },
    })),
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
  ];
}

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
  return {
    object: bucket,
    retainWhenKept,
    // Never made for a teardown: without its Bucket there is nothing of it to keep or remove.
    onlyAfter: { ref: bucket, reached: () => true },
    outcome: () =>
      u.deleteObjects
        ? { done: true }
        : { done: true, kept: `bucket ${u.bucket} may hold objects and deleteObjects is off, so it is kept in the store with them` },
  };
}

/** The companions' types, for the leak sweeper and the target's RBAC. */
export const USER_TYPES = [Secrets, S3CredentialsType, S3Policies, S3PolicyBindings, SeaweedBuckets, BucketLifecyclePolicies];

type Status = { phase?: string; accessKey?: string; conditions?: { type: string; reason?: string }[] };
const statusOf = (o: TargetObject | undefined): Status => (o?.status ?? {}) as Status;
// The operator's condition reasons are identifiers; anything else a target writes there is not echoed.
const REASON = /^[A-Za-z][A-Za-z0-9]{0,63}$/;

/** Where one of the operator's objects stands: undefined once Ready, else why not (or a failure). */
function waitingFor(what: string, o: TargetObject | undefined): { message?: string; failed?: string } {
  if (!o) return { message: `waiting for ${what} to be made` };
  const { phase, conditions } = statusOf(o);
  if (phase === 'Ready') return {};
  const reason = conditions?.find((c) => c.type === 'Ready')?.reason;
  const why = reason && REASON.test(reason) ? ` (${reason})` : '';
  const where = `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
  if (phase === 'Failed') return { failed: `the SeaweedFS operator could not make ${where}${why}` };
  return {
    message: `waiting for the SeaweedFS operator to make ${where}${phase ? `: ${phase === 'Pending' || phase === 'Terminating' ? phase : 'not Ready'}` : ''}${why}`,
  };
}

/** What userAccess needs to know of a user: everything but its keys, which it reads from their Secret. */
export type UserPlace = Pick<SeaweedUser, 'base' | 'namespace' | 'bucket' | 'ownsBucket'> & { lifecycle?: boolean };

/**
 * Whether the user, its keys, its policy and its bucket are in place, and what an app gets of them:
 * the keys in our Secret (companions[0]), once the operator registered these very keys (its
 * S3Credentials names that access key).
 */
export function userAccess(
  u: UserPlace,
  found: { identity: TargetObject | undefined; companions: (TargetObject | undefined)[] },
  endpoint: string,
): { ready: boolean; message?: string; connectionDetails: ConnectionDetails } {
  const [secret, credentials, policy, binding, bucket, lifecycle] = found.companions;
  const steps = [
    ...(u.ownsBucket ? [waitingFor('the bucket', bucket)] : []),
    ...(u.lifecycle ? [waitingFor("the bucket's lifecycle rules", lifecycle)] : []),
    waitingFor("the bucket's user", found.identity),
    waitingFor("the user's keys", credentials),
    waitingFor("the user's policy", policy),
    waitingFor("the user's policy binding", binding),
  ];
  const failed = steps.find((s) => s.failed)?.failed;
  if (failed) throw new ReasonedError(Reasons.BucketAccessFailed, failed);
  const keys = secretText((secret as { data?: Record<string, string> } | undefined)?.data);
  const registered = Boolean(keys.accessKey) && statusOf(credentials).accessKey === keys.accessKey;
  const message =
    steps.find((s) => s.message)?.message ??
    (registered ? undefined : `waiting for S3Credentials ${u.namespace}/${u.base} to register the user's keys`);
  const access = message ? {} : { accessKey: keys.accessKey, secretKey: keys.secretKey };
  return {
    ready: !message,
    ...(message ? { message } : {}),
    connectionDetails: s3ConnectionDetails({ endpoint, bucket: u.bucket, ...access }),
  };
}
