// Where a SeaweedFS bucket user stands, read from the operator's objects' status: whether its user,
// keys, policy and bucket are in place, what the operator refuses or is still retrying, and what an
// app gets meanwhile. The objects themselves are made in bucket-user.ts.
import { getCondition, ReasonedError } from '../../kit/conditions.ts';
import type { ConnectionDetails } from '../../runtime/managed/types.ts';
import type { CredentialsView, TargetObject } from '../../runtime/native/kind.ts';
import { secretText } from '../../runtime/providers/credentials.ts';
import { Reasons, UnprovenError } from '../../runtime/reasons.ts';
import { S3_KEY_KEYS, s3ConnectionDetails } from '../shared/s3-details.ts';
import type { SeaweedUser } from './bucket-user.ts';
import { S3CredentialsType } from './operator.ts';

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
/**
 * When this process first read each operator object Failed, in a row (by uid): the operator keeps its
 * Ready condition's lastTransitionTime while Ready stays False, so after a store slow to start that
 * time says nothing of how long a step has been retried. Bounded: the oldest go first.
 */
const failingSince = new Map<string, number>();
const FAILING_REMEMBERED = 10_000;

/** Since when `o` has been Failed, as far as this process can tell; forgotten once it is not. */
function failedSince(o: TargetObject, failed: boolean, transition: string | undefined): number | undefined {
  const key = o.metadata.uid ?? `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
  if (!failed) {
    failingSince.delete(key);
    return undefined;
  }
  let seen = failingSince.get(key);
  if (seen === undefined) {
    seen = Date.now();
    failingSince.set(key, seen);
    if (failingSince.size > FAILING_REMEMBERED) failingSince.delete(failingSince.keys().next().value!);
  }
  return Math.max(seen, Date.parse(transition ?? '') || 0);
}

/** The operator's Failed reasons that no retry of its own mends: a name taken, a document or quota refused, a rename. */
const LASTING = /^(Conflict|BucketAlreadyExists|InvalidPolicy|QuotaInvalid|VersioningSuspendBlocked|[A-Za-z]+RenameNotSupported)$/;

/** Where one of the operator's objects stands: undefined once Ready, else why not (or a failure). */
function waitingFor(what: string, o: TargetObject | undefined): { message?: string; failed?: string } {
  if (!o) return { message: `waiting for ${what} to be made` };
  const { phase, conditions, observedGeneration } = statusOf(o);
  const since = failedSince(o, phase === 'Failed', getCondition(conditions, 'Ready')?.lastTransitionTime);
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
  if (since !== undefined && Date.now() - since > OPERATOR_RETRY_PATIENCE_MS)
    return { failed: `the SeaweedFS operator has failed to make ${where} since ${new Date(since).toISOString()}${why}` };
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
