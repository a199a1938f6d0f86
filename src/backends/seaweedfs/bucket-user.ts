// A bucket and a user of its own in a Seaweed, as the SeaweedFS operator's kinds say them: a Bucket,
// an S3Identity (the user), its keys in a Secret provider-rook writes and an S3Credentials that
// registers them, and an S3Policy bound to the user that reaches only that bucket. The operator
// makes them in the store; provider-rook holds no credential of the store at all. Both SeaweedFS
// kinds (a store with a bucket of its own, a bucket in a shared store) use it.
import { createHash } from 'node:crypto';
import { getCondition, ReasonedError } from '../../kit/conditions.ts';
import { Secrets, type ObjectRef } from '../../kit/kube/resources.ts';
import type { AccessMode } from '../../runtime/claims/access.ts';
import { FEATURES, type BucketFeatures, type FeatureSupport } from '../../runtime/claims/features.ts';
import type { ConnectionDetails } from '../../runtime/managed/types.ts';
import type { Companion, CredentialsView, KindContext, TargetObject, Teardown } from '../../runtime/native/kind.ts';
import { secretText } from '../../runtime/providers/credentials.ts';
import { Reasons, UnprovenError } from '../../runtime/reasons.ts';
import { S3_KEY_KEYS, s3ConnectionDetails } from '../shared/s3-details.ts';
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
      const { bucketName, conditions } = statusOf(have);
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

type Status = {
  phase?: string;
  bucketName?: string;
  observedGeneration?: number;
  accessKey?: string;
  identityName?: string;
  conditions?: { type: string; reason?: string; lastTransitionTime?: string }[];
};
const statusOf = (o: TargetObject | undefined): Status => (o?.status ?? {}) as Status;
// The operator's condition reasons are identifiers; anything else a target writes there is not echoed.
const REASON = /^[A-Za-z][A-Za-z0-9]{0,63}$/;
/** How long the operator's retries of a Failed step are waited for before it counts as a failure. */
export const OPERATOR_RETRY_PATIENCE_MS = 5 * 60_000;
/** The operator's Failed reasons that no retry of its own mends: a name taken, a document or quota refused, a rename. */
const LASTING = /^(Conflict|BucketAlreadyExists|InvalidPolicy|QuotaInvalid|VersioningSuspendBlocked|[A-Za-z]+RenameNotSupported)$/;

/** Where one of the operator's objects stands: undefined once Ready, else why not (or a failure). */
function waitingFor(what: string, o: TargetObject | undefined): { message?: string; failed?: string } {
  if (!o) return { message: `waiting for ${what} to be made` };
  const { phase, conditions, observedGeneration } = statusOf(o);
  // Ready for the spec as it is now: the operator writes observedGeneration only once it applied it.
  const { generation } = o.metadata as { generation?: number };
  const behind = observedGeneration !== undefined && generation !== undefined && observedGeneration !== generation;
  if (phase === 'Ready' && !behind) return {};
  const reason = getCondition(conditions, 'Ready')?.reason;
  const why = reason && REASON.test(reason) ? ` (${reason})` : '';
  const where = `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
  // The operator says Failed for every error it retries (its store's filer not up yet, a restart):
  // only what no retry mends is a failure here; the rest is waited for, its reason said.
  if (phase === 'Failed' && reason === 'BucketAlreadyExists')
    return {
      failed:
        `the SeaweedFS operator could not make ${where}${why}: a bucket of its name is in the store, and its status does not say ` +
        "it made it (a status write the operator lost, or a Bucket made again over a bucket kept). If it is this resource's, " +
        'set spec.adoptExisting: true on that Bucket; provider-rook keeps it so',
    };
  if (phase === 'Failed' && (!reason || LASTING.test(reason))) return { failed: `the SeaweedFS operator could not make ${where}${why}` };
  // Retried past the time a store takes to start, it is a failure all the same (a refusal that lasts).
  const since = getCondition(conditions, 'Ready')?.lastTransitionTime;
  if (phase === 'Failed' && since && Date.now() - Date.parse(since) > OPERATOR_RETRY_PATIENCE_MS)
    return { failed: `the SeaweedFS operator has failed to make ${where} since ${since}${why}` };
  if (phase === 'Failed') return { message: `waiting for the SeaweedFS operator, which retries ${where}${why}` };
  if (phase === 'Ready') return { message: `waiting for the SeaweedFS operator to apply the change to ${where}` };
  return {
    message: `waiting for the SeaweedFS operator to make ${where}${phase ? `: ${phase === 'Pending' || phase === 'Terminating' ? phase : 'not Ready'}` : ''}${why}`,
  };
}

/**
 * An S3Credentials pinned to another IAM user: the operator resolves a user it cannot find as the raw
 * name it is given (one made before our S3Identity, say) and keeps a key's user for good. Keys of
 * someone else's user are never published; deleting it lets provider-rook make it again.
 */
function otherUser(u: UserPlace, o: TargetObject | undefined): { failed?: string } {
  const pinned = o?.kind === S3CredentialsType.kind ? statusOf(o).identityName : undefined;
  if (!pinned || pinned === u.iamName) return {};
  const said = /^[\w.@+=,-]{1,128}$/.test(pinned) ? pinned : 'another';
  return {
    failed: `S3Credentials ${o!.metadata.namespace}/${o!.metadata.name} registered the user's keys to IAM user ${said}, not ${u.iamName}: delete it, and provider-rook makes it again`,
  };
}

/** What userAccess needs to know of a user: everything but its keys, which it reads from their Secret. */
export type UserPlace = Pick<SeaweedUser, 'base' | 'namespace' | 'iamName' | 'bucket' | 'ownsBucket'> & { lifecycle?: boolean };

/**
 * Whether the user, its keys, its policy and its bucket are in place, and what an app gets of them:
 * the keys in our Secret, once the operator registered these very keys (its S3Credentials names
 * that access key). While new keys are being registered beside older ones that still work (a
 * rotation), the older ones are what the app keeps.
 */
export function userAccess(
  u: UserPlace,
  found: { identity: TargetObject | undefined; companions: (TargetObject | undefined)[] },
  where: { endpoint: string; credentials: CredentialsView },
): { ready: boolean; message?: string; rotating?: string; connectionDetails: ConnectionDetails } {
  const [secret, credentials, policy, binding, ...rest] = found.companions;
  const bucket = u.ownsBucket ? rest.shift() : undefined;
  const lifecycle = u.ownsBucket && u.lifecycle ? rest.shift() : undefined;
  const steps = [
    ...(u.ownsBucket ? [waitingFor('the bucket', bucket)] : []),
    ...(u.lifecycle ? [waitingFor("the bucket's lifecycle rules", lifecycle)] : []),
    waitingFor("the bucket's user", found.identity),
    waitingFor("the user's policy", policy),
    waitingFor("the user's policy binding", binding),
  ];
  // Keys pinned to someone else's user are not ours to give: withheld, also where they were published before.
  const foreign = [credentials, ...rest].map((o) => otherUser(u, o)).find((s) => s.failed)?.failed;
  if (foreign) throw new UnprovenError(Reasons.BucketAccessFailed, foreign, S3_KEY_KEYS);
  const failed = [...steps, waitingFor("the user's keys", credentials)].find((s) => s.failed)?.failed;
  if (failed) throw new ReasonedError(Reasons.BucketAccessFailed, failed);
  const details = (keys?: { accessKey?: string; secretKey?: string }): ConnectionDetails =>
    s3ConnectionDetails({
      endpoint: where.endpoint,
      bucket: u.bucket,
      ...(keys ? { accessKey: keys.accessKey, secretKey: keys.secretKey } : {}),
    });
  const waiting = steps.find((s) => s.message)?.message;
  if (waiting) return { ready: false, message: waiting, connectionDetails: details() };
  const current = registeredKeys(secret, credentials);
  if (current) return { ready: true, connectionDetails: details(current) };
  const making = `waiting for the SeaweedFS operator to register the user's new keys (S3Credentials ${u.namespace}/${credentials?.metadata.name ?? u.base})`;
  // Older generations' pairs follow, oldest first: the newest that works is what the app keeps meanwhile.
  const live = where.credentials.outstanding.filter((g) => !where.credentials.due.includes(g));
  const older = live.map((_, i) => registeredKeys(rest[2 * i], rest[2 * i + 1])).filter((k) => k !== undefined);
  if (older.length) return { ready: true, rotating: making, connectionDetails: details(older.at(-1)) };
  return { ready: false, message: making, connectionDetails: details() };
}

/** The keys in a generation's Secret, when its S3Credentials registered that very access key. */
function registeredKeys(
  secret: TargetObject | undefined,
  credentials: TargetObject | undefined,
): { accessKey: string; secretKey: string } | undefined {
  const keys = secretText((secret as { data?: Record<string, string> } | undefined)?.data);
  return keys.accessKey && keys.secretKey && statusOf(credentials).phase === 'Ready' && statusOf(credentials).accessKey === keys.accessKey
    ? { accessKey: keys.accessKey, secretKey: keys.secretKey }
    : undefined;
}
