// What a kind with a bucket user wires from the admin Jobs of minio-admin.ts: whether its bucket and
// user are ready and what an app gets of them, how its keys rotate, and, for a store with a bucket
// of its own, its teardown. The Rook MinIO and MinIO Operator stores and the shared-store bucket use it.
import { ReasonedError } from '../../kit/conditions.ts';
import type { ConnectionDetails, ManagedResource } from '../../runtime/managed/types.ts';
import type { CredentialsView, KindContext, NativeKind, Rotation, TargetObject } from '../../runtime/native/kind.ts';
import { secretText } from '../../runtime/providers/credentials.ts';
import { Reasons } from '../../runtime/reasons.ts';
import { jobState, retireUsers, storeTeardown, SUPERSEDED_JOBS, userKeys, type BucketUser } from './minio-admin.ts';
import { s3ConnectionDetails } from './s3-details.ts';

/** Whether the bucket, its user and policy are in place (the access Job, companions[i], completed); else why not. */
function accessReady(
  job: TargetObject | undefined,
  u: Pick<BucketUser, 'bucket' | 'namespace'>,
): { ready: boolean; message?: string; failed?: string } {
  const state = jobState(job);
  if (state.complete) return { ready: true };
  const where = `Job ${u.namespace}/${job?.metadata.name ?? '(not made yet)'}`;
  if (state.failed) return { ready: false, failed: `${where} could not make bucket ${u.bucket} and its user: ${state.failed.message}` };
  return { ready: false, message: `waiting for ${where} to make bucket ${u.bucket} and its user` };
}

/**
 * What a MinIO store with a bucket of its own adds to its kind besides its companions: before it
 * goes, its user is removed and, unless the bucket holds objects, the bucket (a bucket holding
 * objects keeps the whole store, Retain); older Jobs are superseded; only the bucket user's keys
 * rotate (`noUser`: why a store without one has none that can).
 */
export function storeWithBucketUser<MR extends ManagedResource & { spec: { bucket?: { deleteObjects?: boolean } } }>(
  user: (mr: MR, name: string, ctx: KindContext) => BucketUser | undefined,
  owner: (mr: MR) => string,
  noUser: string,
): Pick<NativeKind<MR>, 'teardown' | 'superseded' | 'rotation'> {
  return {
    teardown(mr, name, ctx) {
      const u = user(mr, name, ctx);
      return u && storeTeardown(u, mr.spec.bucket?.deleteObjects ?? false);
    },
    superseded: SUPERSEDED_JOBS,
    rotation: bucketUserRotation(user, owner, (mr) => (mr.spec.bucket ? undefined : noUser)),
  };
}

/** How a kind with a bucket user rotates its keys; `cannotRotate` says when a resource has no user to rotate. */
export function bucketUserRotation<MR>(
  user: (mr: MR, name: string, ctx: KindContext) => BucketUser | undefined,
  owner: (mr: MR) => string,
  cannotRotate?: (mr: MR) => string | undefined,
): Rotation<MR> {
  return {
    retire(mr, name, ctx) {
      const due = ctx.credentials.due.map((generation) => ({ generation, accessKey: userKeys(ctx, owner(mr), generation).accessKey }));
      return retireUsers(user(mr, name, ctx)!, due);
    },
    ...(cannotRotate ? { cannotRotate } : {}),
  };
}

/**
 * What an app gets of a bucket user: its keys, once its access Job made them. While new keys are
 * made beside older ones that still work (a rotation), nothing: the Secret keeps the older ones.
 */
export function userAccess(
  job: TargetObject | undefined,
  secret: TargetObject | undefined,
  where: { bucket: string; namespace: string; endpoint: string },
  credentials: CredentialsView,
): { ready: boolean; message?: string; rotating?: string; connectionDetails?: ConnectionDetails } {
  const access = accessReady(job, where);
  if (access.failed) throw new ReasonedError(Reasons.BucketAccessFailed, access.failed);
  if (!access.ready && credentials.outstanding.length) return { ready: true, rotating: access.message };
  const keys = secretText((secret as { data?: Record<string, string> } | undefined)?.data);
  return {
    ready: access.ready,
    ...(access.message ? { message: access.message } : {}),
    connectionDetails: s3ConnectionDetails({
      endpoint: where.endpoint,
      accessKey: keys.accessKey,
      secretKey: keys.secretKey,
      bucket: where.bucket,
    }),
  };
}
