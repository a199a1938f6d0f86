// How a claim says where it stands, for both claim reconcilers: its status written only when it
// changed, and a failed pass reported once as an Event and its conditions.
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError, setCondition, getCondition, type Condition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { sameJson } from '../../kit/json.ts';
import { mergePatchSame } from '../../kit/controller/finalizers.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict, isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { Reasons, Ready, Synced, reasonOf, reported } from '../reasons.ts';
import { done, requeue, requeueAfter, type Result, keyOf } from '../../kit/controller/result.ts';
import { NOT_SCHEDULED, type Claim } from './claim.ts';
import type { ProgressWrites } from '../progress.ts';
import type { ManagedResource } from '../managed/types.ts';
import { ANNOTATION_ROTATE, CONDITION_ROTATED, LABEL_PROTECTED } from '../labels.ts';
import { rotationRequest } from '../native/rotation.ts';

export type Cond = Parameters<typeof setCondition>[1];

/** Refusals that say a claim is not (or no longer) paired with the resource it names, or with the access it asked for. */
const UNPAIRED = new Set<string>([
  Reasons.ManagedResourceNotFound,
  Reasons.ManagedResourceConflict,
  Reasons.ManagedResourceReleased,
  Reasons.AccessNotAllowed,
  Reasons.GrantsNotSupported,
]);

/** How long to wait before re-checking a claim that is stuck on something a watch may not report. */
export const RECHECK_MS = 30_000;

/** Ready=False while the claim waits for its managed resource; the message says for what. */
export const binding = (message: string): Cond => ({ type: 'Ready', status: 'False', reason: Reasons.Binding, message });

/** What a claim shows of its resource's placement: the Scheduled condition and the chosen Provider. */
export interface Mirrored {
  conditions: Cond[];
  providerRef?: { name: string };
  /** Its class protects it: its resource carries the protection label, so admission refuses its deletion. */
  protected?: boolean;
  /** Its keys' rotation, as its resource records it. */
  credentials?: Record<string, unknown>;
}

/** What a claim shows of its keys: its resource's CredentialsRotated condition and status.credentials. */
export function rotationOf(mr: ReadonlyDeep<ManagedResource>): Pick<Mirrored, 'conditions' | 'credentials'> {
  const c = getCondition(mr.status?.conditions, CONDITION_ROTATED);
  const credentials = mr.status?.credentials as Record<string, unknown> | undefined;
  return {
    conditions: c ? [{ type: c.type, status: c.status, reason: c.reason, ...(c.message ? { message: c.message } : {}) }] : [],
    ...(credentials ? { credentials } : {}),
  };
}

/** A claim's request to rotate its keys goes to its managed resource, which answers it. */
export async function forwardRotationRequest(
  client: Client,
  type: ResourceType,
  claim: Claim,
  mr: ReadonlyDeep<ManagedResource>,
  signal: AbortSignal,
): Promise<void> {
  // Bounded: a value of any length reaches the resource as itself, or as its digest.
  const want = rotationRequest(claim.metadata.annotations?.[ANNOTATION_ROTATE]);
  if (want === undefined || mr.metadata.annotations?.[ANNOTATION_ROTATE] === want) return;
  // The resource checked may be a stale copy of one since made anew for another claim.
  await mergePatchSame(client, type, mr, { metadata: { annotations: { [ANNOTATION_ROTATE]: want } } }, signal);
}

/** Where a claim reconciler writes. */
export interface ClaimWriter {
  client: Client;
  claims: ResourceType;
  recorder: EventRecorder;
  /** Progress messages, written at most once per window (progress.ts); unset: every change at once. */
  progress?: ProgressWrites;
}

/** What a pass reports on its claim: its Ready and Synced conditions, its phase, and what it mirrors of its resource. */
export interface ClaimReport {
  ready: Cond;
  synced: Cond;
  phase?: 'Unbound' | 'Bound';
  also?: Cond[] | Mirrored;
}

/**
 * Writes the claim's status only when it changed; `also` carries what it mirrors of its resource.
 * Returns how long to wait before the next pass where a new progress message waits for its window.
 */
export async function writeClaimStatus(
  w: ClaimWriter,
  { claim, cached, signal }: { claim: Claim; cached: ReadonlyDeep<Claim>; signal: AbortSignal },
  { ready, synced, phase, also = [] }: ClaimReport,
): Promise<number> {
  const {
    conditions: extra,
    providerRef,
    protected: isProtected,
    credentials,
  } = Array.isArray(also) ? { conditions: also } : (also as Mirrored);
  let conditions = claim.status?.conditions;
  for (const c of [ready, synced, ...extra]) conditions = setCondition(conditions, { ...c, observedGeneration: claim.metadata.generation });
  const { protected: _was, credentials: had, ...rest } = claim.status ?? {};
  // Mirrored protection is exact: it goes when it is lifted (a claim failing to bind keeps what it had).
  const protection = Array.isArray(also) ? (claim.status?.protected ? { protected: true } : {}) : isProtected ? { protected: true } : {};
  // Rotation is mirrored whenever the resource is read (a failing pass keeps what the claim had).
  const keys = Array.isArray(also) ? had : credentials;
  claim.status = {
    ...rest,
    conditions,
    ...(phase ? { bindingPhase: phase } : {}),
    ...(providerRef ? { providerRef } : {}),
    ...protection,
    ...(keys ? { credentials: keys } : {}),
  };
  if (sameJson(claim.status, cached.status ?? {})) return 0;
  const [key, now] = [keyOf(claim.metadata), Date.now()];
  const wait = w.progress?.wait(key, claim.status, cached.status, now) ?? 0;
  if (wait > 0) return wait;
  await w.client.updateStatus(w.claims, claim, signal);
  w.progress?.wrote(key, now);
  return 0;
}

/** Comes back in `ms`, or sooner for a progress message that waits (0: none waits). */
export const recheck = (ms: number, deferredMs: number): Result => requeueAfter(deferredMs ? Math.min(ms, deferredMs) : ms);

/**
 * A pass that failed: a conflict is retried quietly, a claim gone is done; anything else is an Event
 * and Ready/Synced saying why. Refusals (a missing class, a namespace not allowed) wait for a change
 * (or a recheck); API errors back off.
 */
export async function claimFailed(
  w: ClaimWriter,
  claim: Claim,
  cached: ReadonlyDeep<Claim>,
  err: unknown,
  signal: AbortSignal,
): Promise<Result> {
  if (isConflict(err)) return requeue(); // a concurrent writer; the next pass reads fresh state
  if (isNotFound(err) && !(err instanceof ReasonedError)) return done();
  const message = (err as Error).message;
  w.recorder.warning(claim, err instanceof ReasonedError ? err.reason : Reasons.CannotBindManagedResource, message);
  const ready = claim.spec?.resourceRef ? binding(message) : { ...Ready.creating(), message };
  const scheduled: Cond[] = NOT_SCHEDULED.has(reasonOf(err))
    ? [{ type: 'Scheduled', status: 'False', reason: reasonOf(err), message }]
    : [];
  // A claim whose pairing with its resource cannot be proven (any more) is not bound to it.
  const phase = claim.status?.bindingPhase === 'Bound' && UNPAIRED.has(reasonOf(err)) ? 'Unbound' : undefined;
  await writeClaimStatus(
    w,
    { claim, cached, signal },
    { ready, synced: Synced.error(reasonOf(err), message), phase, also: scheduled },
  ).catch(() => undefined);
  return err instanceof ReasonedError ? requeueAfter(RECHECK_MS) : requeue();
}

/** What a claim shows of its resource's placement: the Scheduled condition and the chosen Provider. */
export function mirrored(mr: ManagedResource, claim: Claim): Mirrored {
  let scheduled: Cond | undefined = getCondition(mr.status?.conditions, 'Scheduled');
  // Placed by its class (no scheduler, so no condition): a claim that once said it was not placed
  // (its selector did not match the class's Provider) says it is now.
  const said = Boolean(getCondition(claim.status?.conditions, 'Scheduled'));
  if (!scheduled && said && mr.spec.providerRef?.name)
    scheduled = {
      type: 'Scheduled',
      status: 'True',
      reason: Reasons.Scheduled,
      message: `on Provider ${mr.spec.providerRef.name}, named by its class`,
    };
  // Its class's protection, as its resource carries it (the claim's own label is judged on the claim itself).
  const isProtected = mr.metadata.labels?.[LABEL_PROTECTED] === 'true';
  const rotation = rotationOf(mr);
  return {
    ...(isProtected ? { protected: true } : {}),
    ...(rotation.credentials ? { credentials: rotation.credentials } : {}),
    conditions: [
      ...(scheduled
        ? [
            {
              type: 'Scheduled',
              status: scheduled.status,
              reason: scheduled.reason,
              ...(scheduled.message ? { message: scheduled.message } : {}),
            },
          ]
        : []),
      ...rotation.conditions,
    ],
    ...(mr.spec.providerRef?.name ? { providerRef: { name: mr.spec.providerRef.name } } : {}),
  };
}

/** What holds a managed resource up: no Provider yet, its sync error, else why it is not ready. */
export function progressOf(mr: ManagedResource): string | undefined {
  const scheduled = getCondition(mr.status?.conditions, 'Scheduled');
  if (!mr.spec.providerRef)
    return scheduled?.status === 'False'
      ? `not scheduled (${scheduled.reason}): ${scheduled.message ?? ''}`
      : 'waiting for the scheduler to choose a Provider';
  const synced = getCondition(mr.status?.conditions, 'Synced');
  return synced?.status === 'False' ? (synced.message ?? synced.reason) : readyOf(mr)?.message;
}

/** A claim is as Synced as its resource: a failure there (an unreachable target...) shows on the claim, with its reason. */
export function syncedOf(mr: ManagedResource): Cond {
  const synced = getCondition(mr.status?.conditions, 'Synced');
  return synced?.status === 'False' ? Synced.error(reported(synced.reason), synced.message ?? synced.reason) : Synced.success();
}

export function readyOf(mr: ManagedResource): Condition | undefined {
  return getCondition(mr.status?.conditions, 'Ready');
}
