// A bucket and a user of its own in a MinIO store, made where the store's root credentials live: by
// a Job in the target that runs MinIO's client (mc) with the root Secret mounted. provider-rook never
// reads a store's root credentials; it writes the user's Secret (keys it derives, and the policy) and
// the Job, and reads the Job's outcome. Both MinIO backends (Rook MinIO, the MinIO Operator) and the
// shared-store bucket use it.
import { getCondition } from '../../kit/conditions.ts';
import { createHash } from 'node:crypto';
import { Jobs, Secrets } from '../../kit/kube/resources.ts';
import type { Companion, KindContext, Rotation, TargetObject, Teardown } from '../../runtime/native/kind.ts';
import type { BucketFeatures } from '../../runtime/claims/features.ts';
import { policyDocument } from './s3-policy.ts';
import { grantScript, KEPT_EXIT_CODE, REVOKE } from './mc-scripts.ts';

export { KEPT_EXIT_CODE };

export type AccessMode = 'ReadWrite' | 'ReadOnly' | 'WriteOnly';

/** Where the store keeps its root user: keys username/password (Rook MinIO), or a MinIO config.env (the MinIO Operator). */
export type RootSecret = { name: string; format: 'username-password' } | { name: string; format: 'config.env' };

/** MinIO's client, run in the target only (never here: its licence is the AGPL). */
export const MINIO_CLIENT_IMAGE = 'quay.io/minio/mc:RELEASE.2025-04-16T18-13-26Z';

/** What a bucket in a store needs to know of it: where it is and how a Job there reaches it as root. */
export interface StoreAccess {
  providerRef: { name: string };
  namespace: string;
  endpoint: string;
  rootSecret: RootSecret;
}

export const LABEL_ADMIN = 'rook.crossplane.io/minio-admin';
/** Access Jobs of earlier keys or policies, and finished retire Jobs: deleted once no longer wanted (NativeKind.superseded). */
export const SUPERSEDED_JOBS = {
  type: Jobs,
  labelSelector: `${LABEL_ADMIN} in (grant,retire)`,
  matches: (labels: Record<string, string>): boolean => labels[LABEL_ADMIN] === 'grant' || labels[LABEL_ADMIN] === 'retire',
};

export interface BucketUser {
  /** Names what is made in the target: <base>-user (unless userSecret says), <base>-access-<hash>, <base>-revoke. */
  base: string;
  namespace: string;
  /** The store's S3 endpoint, as a pod in the target reaches it. */
  endpoint: string;
  root: RootSecret;
  bucket: string;
  access: AccessMode;
  /** The bucket is this user's to make and, on deletion, to remove; a grant's user only reaches one that exists. */
  ownsBucket: boolean;
  keys: { accessKey: string; secretKey: string };
  /** Access keys of earlier generations not yet removed (rotation): a revoke removes them too. */
  older?: string[];
  /** The keys' generation (0 until rotated). */
  generation?: number;
  /** The bucket's features, applied by the access Job (its owner's only). */
  features?: BucketFeatures;
  /** The user's Secret in the target (default <base>-user). */
  userSecret?: string;
  image?: string;
}

/**
 * A user's keys of one generation (the current one unless named), derived for its owner (see
 * KindContext.credential): MinIO users are named by their access key, so each generation is a user.
 */
export function userKeys(ctx: KindContext, owner: string, generation = ctx.credentials.generation): BucketUser['keys'] {
  const purpose = generation === 0 ? `minio-user/${owner}` : `minio-user/${owner}/g${generation}`;
  return { accessKey: ctx.credential(`${purpose}/access-key`, 20), secretKey: ctx.credential(`${purpose}/secret-key`, 40) };
}

/** The user's current keys, and the access keys of older generations still in the store. */
export function rotatingKeys(ctx: KindContext, owner: string): Pick<BucketUser, 'keys' | 'older' | 'generation'> {
  const older = ctx.credentials.outstanding.map((g) => userKeys(ctx, owner, g).accessKey);
  return { keys: userKeys(ctx, owner), ...(older.length ? { older } : {}), generation: ctx.credentials.generation };
}

const digest = (value: string): string => createHash('sha256').update(value).digest('hex');
/** Job names become pod labels: at most 63 characters. */
const named = (base: string, suffix: string): string => `${base.slice(0, 63 - suffix.length - 1).replace(/[-.]+$/, '')}-${suffix}`;
export const userSecretName = (u: BucketUser): string => u.userSecret ?? named(u.base, 'user');
const policyName = (u: BucketUser): string => `provider-rook-${u.keys.accessKey}`;

/** A quota size as mc takes it (10Gi is 10GiB). */
const mcSize = (size: string): string => `${size}B`;

/** What the feature steps read; none for a bucket without features, so its Job stays what it was. */
function featureEnv(f: BucketFeatures | undefined): { name: string; value: string }[] {
  if (!f) return [];
  return [
    { name: 'OBJECT_LOCK', value: String(f.objectLock === true) },
    { name: 'VERSIONING', value: f.versioning ?? '' },
    { name: 'RETENTION_MODE', value: f.defaultRetention?.mode.toUpperCase() ?? '' },
    { name: 'RETENTION_DAYS', value: f.defaultRetention ? String(f.defaultRetention.days) : '' },
    { name: 'QUOTA', value: f.quota ? mcSize(f.quota.size) : '' },
    { name: 'LIFECYCLE', value: String(Boolean(f.lifecycle)) },
  ];
}

/** The bucket's lifecycle rules as mc imports them (MinIO's JSON form of an S3 lifecycle configuration). */
export function lifecycleDocument(lifecycle: NonNullable<BucketFeatures['lifecycle']>): object {
  return {
    Rules: lifecycle.rules.map((r) => ({
      ID: r.id,
      Status: 'Enabled',
      Filter: { Prefix: r.prefix ?? '' },
      ...(r.expirationDays ? { Expiration: { Days: r.expirationDays } } : {}),
      ...(r.noncurrentVersionExpirationDays ? { NoncurrentVersionExpiration: { NoncurrentDays: r.noncurrentVersionExpirationDays } } : {}),
    })),
  };
}

const userPolicy = (u: BucketUser): object => policyDocument(u.bucket, u.access, { features: Boolean(u.features) });

/** The documents the grant loads from the user's Secret: its policy, and the bucket's lifecycle rules if it has any. */
function documents(u: BucketUser): { policy: string; lifecycle?: string } {
  const rules = u.features?.lifecycle;
  return { policy: JSON.stringify(userPolicy(u)), ...(rules ? { lifecycle: JSON.stringify(lifecycleDocument(rules)) } : {}) };
}

/** The user's Secret: its keys, and its policy for the Job to load. */
export function userSecret(u: BucketUser): TargetObject {
  const { policy, lifecycle } = documents(u);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: userSecretName(u), namespace: u.namespace, labels: { [LABEL_ADMIN]: 'user' } },
    type: 'Opaque',
    data: {
      accessKey: Buffer.from(u.keys.accessKey).toString('base64'),
      secretKey: Buffer.from(u.keys.secretKey).toString('base64'),
      'policy.json': Buffer.from(policy).toString('base64'),
      ...(lifecycle ? { 'lifecycle.json': Buffer.from(lifecycle).toString('base64') } : {}),
    },
  };
}

type Action = 'grant' | 'revoke' | 'retire';

/** What the grant's pod must find in the user's Secret: this Job's access key, and the digests of its secret key, policy and rules. */
function expectedSecret(u: BucketUser): { name: string; value: string }[] {
  const { policy, lifecycle } = documents(u);
  return [
    { name: 'EXPECTED_ACCESS_KEY', value: u.keys.accessKey },
    { name: 'EXPECTED_SECRET_KEY_SHA256', value: digest(u.keys.secretKey) },
    { name: 'EXPECTED_POLICY_SHA256', value: digest(policy) },
    ...(lifecycle ? [{ name: 'EXPECTED_LIFECYCLE_SHA256', value: digest(lifecycle) }] : []),
  ];
}

/**
 * `deleteObjects`: a revoke empties the bucket too. `old`: the key generations a retire removes.
 * `forName`: the grant as its name digests it, without the wait for the Secret (names made before it stay the same: no Job runs again on upgrade).
 */
function job(
  u: BucketUser,
  name: string,
  action: Action,
  { deleteObjects = false, old = u.older ?? [], forName = false }: { deleteObjects?: boolean; old?: string[]; forName?: boolean } = {},
): TargetObject {
  const labels = { [LABEL_ADMIN]: action };
  const fromUser = (key: string) => ({ valueFrom: { secretKeyRef: { name: userSecretName(u), key } } });
  const root =
    u.root.format === 'config.env'
      ? [{ name: 'ROOT_ENV_FILE', value: '/root-env/config.env' }]
      : [
          { name: 'ROOT_USER', valueFrom: { secretKeyRef: { name: u.root.name, key: 'username' } } },
          { name: 'ROOT_PASSWORD', valueFrom: { secretKeyRef: { name: u.root.name, key: 'password' } } },
        ];
  // A revoke reads nothing of the user's Secret: it runs also once that Secret is gone or replaced.
  const readsUser = action !== 'revoke';
  const volumes = [
    ...(readsUser
      ? [
          {
            name: 'user',
            secret: {
              secretName: userSecretName(u),
              items: [
                { key: 'policy.json', path: 'policy.json' },
                ...(action === 'grant' && u.features?.lifecycle ? [{ key: 'lifecycle.json', path: 'lifecycle.json' }] : []),
                // The keys as the Secret holds them now (a variable from a Secret is read once, at the pod's start).
                ...(action === 'grant' && !forName ? ['accessKey', 'secretKey'].map((key) => ({ key, path: key })) : []),
              ],
            },
          },
        ]
      : []),
    { name: 'home', emptyDir: {} },
    // A TLS store's certificate is signed by the cluster's CA (the MinIO Operator's auto-cert): mc trusts it from here.
    { name: 'cluster-ca', configMap: { name: 'kube-root-ca.crt', optional: true } },
    ...(u.root.format === 'config.env' ? [{ name: 'root-env', secret: { secretName: u.root.name } }] : []),
  ];
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: u.namespace, labels },
    spec: {
      backoffLimit: 6,
      // A revoke that cannot reach its store says so sooner; deletion waits for it.
      activeDeadlineSeconds: action === 'grant' ? 1800 : 600,
      // A retire's outcome is read once and recorded on the resource; nothing needs it after that.
      ...(action === 'retire' ? { ttlSecondsAfterFinished: 3600 } : {}),
      ...(action === 'revoke'
        ? {
            podFailurePolicy: {
              rules: [{ action: 'FailJob', onExitCodes: { containerName: 'mc', operator: 'In', values: [KEPT_EXIT_CODE] } }],
            },
          }
        : {}),
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'mc',
              image: u.image ?? MINIO_CLIENT_IMAGE,
              command: ['/bin/sh', '-c', action !== 'grant' ? REVOKE : grantScript({ features: Boolean(u.features), forName })],
              env: [
                { name: 'MC_CONFIG_DIR', value: '/home/mc' },
                { name: 'S3_ENDPOINT', value: u.endpoint },
                { name: 'BUCKET', value: u.bucket },
                { name: 'OWNS_BUCKET', value: String(action !== 'retire' && u.ownsBucket) },
                // A grant's name digests its spec: what a revoke or retire alone reads stays out of it.
                ...(action === 'grant'
                  ? forName
                    ? []
                    : expectedSecret(u)
                  : [
                      { name: 'REMOVE_CURRENT', value: String(action === 'revoke') },
                      { name: 'OLD_USERS', value: old.join(' ') },
                      { name: 'OBJECT_LOCK', value: String(u.features?.objectLock === true) },
                    ]),
                ...(action === 'grant' ? featureEnv(u.features) : []),
                { name: 'DELETE_OBJECTS', value: String(deleteObjects) },
                { name: 'POLICY_NAME', value: policyName(u) },
                // A revoke or retire removes the user provider-rook made, named here: never one a
                // value in the user's Secret (which someone who may patch Secrets there can edit) names.
                action === 'grant'
                  ? { name: 'USER_ACCESS_KEY', ...fromUser('accessKey') }
                  : { name: 'USER_ACCESS_KEY', value: u.keys.accessKey },
                ...(readsUser ? [{ name: 'USER_SECRET_KEY', ...fromUser('secretKey') }] : []),
                ...root,
              ],
              volumeMounts: [
                ...(readsUser ? [{ name: 'user', mountPath: '/user', readOnly: true }] : []),
                { name: 'home', mountPath: '/home' },
                { name: 'cluster-ca', mountPath: '/home/mc/certs/CAs', readOnly: true },
                ...(u.root.format === 'config.env' ? [{ name: 'root-env', mountPath: '/root-env', readOnly: true }] : []),
              ],
              resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
            },
          ],
          volumes,
        },
      },
    },
  };
}

/**
 * The user's Secret and the Job that makes the bucket, the user and its policy. The Job's pod
 * template cannot change, so its name carries a digest of everything it applies (the secret key by
 * its digest only): new keys or a new policy make a new Job, which runs again.
 */
export function bucketUserCompanions(u: BucketUser): Companion[] {
  const secret = userSecret(u);
  return [
    { type: Secrets, name: secret.metadata.name, namespace: u.namespace, purpose: 'bucket user Secret', build: () => secret },
    accessJob(u),
  ];
}

/** The Job alone, for a kind whose own object is the user's Secret. */
export function accessJob(u: BucketUser): Companion {
  // The policy and the secret key are read from the user's Secret: they are in the digest, the key by its digest only.
  const inputs = [
    job(u, '', 'grant', { old: [], forName: true }).spec,
    userPolicy(u),
    digest(u.keys.secretKey),
    ...(u.features?.lifecycle ? [lifecycleDocument(u.features.lifecycle)] : []),
  ];
  const name = named(u.base, `access-${digest(JSON.stringify(inputs)).slice(0, 10)}`);
  return { type: Jobs, name, namespace: u.namespace, purpose: 'bucket access Job', build: () => job(u, name, 'grant') };
}

/**
 * The teardown of a store of its own: needed only once its first access Job completed (before, no
 * user was made, and no one wrote). After a rotation some user was made, whatever the current Job says.
 */
export function storeTeardown(u: BucketUser, deleteObjects: boolean): Teardown {
  const access = accessJob(u);
  const rotated = (u.generation ?? 0) > 0 || Boolean(u.older?.length);
  return {
    ...revokeTeardown(u, deleteObjects),
    retainWhenKept: true,
    ...(rotated ? {} : { onlyAfter: { ref: access, reached: (job: TargetObject) => jobState(job).complete } }),
  };
}

/** Revoking the user (and removing its bucket, if it owns it and the bucket is empty or deleteObjects says so) before deletion. */
export function revokeTeardown(u: BucketUser, deleteObjects: boolean): Teardown {
  const name = named(u.base, 'revoke');
  return {
    requires: [{ type: Secrets, name: u.root.name, namespace: u.namespace, purpose: "store's root credentials" }],
    object: {
      type: Jobs,
      name,
      namespace: u.namespace,
      purpose: 'bucket revoke Job',
      build: () => job(u, name, 'revoke', { deleteObjects }),
    },
    outcome(observed) {
      const state = jobState(observed);
      if (state.complete) return { done: true };
      if (state.failed && state.failed.reason === 'PodFailurePolicy')
        return {
          done: true,
          kept: u.features?.objectLock
            ? `bucket ${u.bucket} holds objects under object lock, so it was kept with them (its user was removed). Delete them by hand once their retention ends, then the bucket`
            : `bucket ${u.bucket} still holds objects or versions of them, so it was kept with them (its user was removed). Empty it and delete it by hand, or let the class delete objects`,
        };
      if (state.failed) return { failed: state.failed.message };
      return { done: false, message: `waiting for Job ${u.namespace}/${name} to remove the user of bucket ${u.bucket}` };
    },
  };
}

/** Removing the users of older generations whose grace period ended (`due`, their access keys), and nothing else. */
export function retireUsers(
  u: BucketUser,
  due: { generation: number; accessKey: string }[],
): ReturnType<NonNullable<Rotation<unknown>['retire']>> {
  const last = Math.max(...due.map((d) => d.generation));
  const name = named(u.base, `retire-${last}`);
  const keys = due.map((d) => d.accessKey);
  return {
    object: {
      type: Jobs,
      name,
      namespace: u.namespace,
      purpose: 'Job removing old keys',
      build: () => job(u, name, 'retire', { old: keys }),
    },
    outcome(observed: TargetObject) {
      const state = jobState(observed);
      if (state.complete) return { done: true };
      if (state.failed) return { failed: `Job ${u.namespace}/${name} ${state.failed.message}` };
      return { done: false, message: `waiting for Job ${u.namespace}/${name} to remove the keys of generation ${last} and older` };
    },
  };
}

interface JobStatus {
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
}

// The Job controller's reasons for a failed Job. Anything else a target writes there is not echoed.
const FAILURES: Record<string, string> = {
  BackoffLimitExceeded: 'its pod failed every retry (BackoffLimitExceeded)',
  DeadlineExceeded: 'it ran out of time, waiting for the store to answer (DeadlineExceeded)',
  PodFailurePolicy: 'its pod exited as a FailJob rule names (PodFailurePolicy)',
};

/** A Job's end, from its conditions as the Job controller writes them. */
export function jobState(obj: TargetObject | undefined): { complete: boolean; failed?: { reason: string; message: string } } {
  const conditions = (obj?.status as JobStatus | undefined)?.conditions ?? [];
  const ended = (type: string) => {
    const c = getCondition(conditions, type);
    return c?.status === 'True' ? c : undefined;
  };
  const failed = ended('Failed');
  const reason = failed?.reason ?? 'Failed';
  return {
    complete: Boolean(ended('Complete')),
    ...(failed ? { failed: { reason, message: `${FAILURES[reason] ?? 'it failed'}; its pod's log says why` } } : {}),
  };
}
