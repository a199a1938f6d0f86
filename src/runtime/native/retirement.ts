// A native kind's side of rotation (rotation.ts): the work that removes keys whose grace period
// ended, made like a companion and waited for, and what the resource says of its keys.
import { ReasonedError, setCondition } from '../../kit/conditions.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import type { Companion, KindContext, NativeKind, ObjectReader, TargetObject } from './kind.ts';
import { ANNOTATION_ROTATE, CONDITION_ROTATED } from '../../kit/meta.ts';
import { ANNOTATION_CREDENTIALS, planRotation, recordOf, rotationStatus, type RotationPlan } from './rotation.ts';

const GENERIC = "provider-rook cannot rotate this backend's keys";

/** Why the keys of `mr` cannot rotate, or undefined when they can. */
export function cannotRotate<MR extends ManagedResource>(kind: NativeKind<MR>, mr: MR): string | undefined {
  return kind.rotation ? kind.rotation.cannotRotate?.(mr) : (kind.cannotRotate ?? GENERIC);
}

/** This pass's plan: no rotation where the keys cannot rotate, or where nothing may be written to the target. */
export function planFor<MR extends ManagedResource>(kind: NativeKind<MR>, mr: MR, now: number, mayWrite: boolean): RotationPlan {
  return planRotation(mr, now, mayWrite && cannotRotate(kind, mr) === undefined);
}

/** The retire work this pass wants (generations past their grace period), if any. */
export function retireWork<MR extends ManagedResource>(
  kind: NativeKind<MR>,
  mr: MR,
  name: string,
  ctx: KindContext,
): ReturnType<NonNullable<NativeKind<MR>['rotation']>['retire']> | undefined {
  return ctx.credentials.due.length && kind.rotation ? kind.rotation.retire(mr, name, ctx) : undefined;
}

/**
 * Where removing old keys stands: `drift` while its work is to be made or still runs, `retired`
 * once it is done (the highest generation it removed). A failure is the resource's Synced error.
 */
export async function retirement<MR extends ManagedResource>(
  kind: NativeKind<MR>,
  {
    mr,
    name,
    ctx,
    read,
    trust,
  }: { mr: MR; name: string; ctx: KindContext; read: ObjectReader; trust(c: Companion, have: TargetObject): void },
  signal: AbortSignal,
): Promise<{ drift?: string; retired?: number }> {
  const work = retireWork(kind, mr, name, ctx);
  if (!work) return {};
  const { object } = work;
  const have = await read.get<TargetObject>(object.type, object.name, object.namespace, signal);
  const generations = ctx.credentials.due.join(', ');
  if (!have) return { drift: `removing keys of generation ${generations}` };
  trust(object, have);
  const outcome = work.outcome(have);
  if ('failed' in outcome) {
    throw new ReasonedError(
      Reasons.RotationFailed,
      `could not remove the keys of generation ${generations}, whose grace period ended (they still work): ${outcome.failed}`,
    );
  }
  return outcome.done ? { retired: Math.max(...ctx.credentials.due) } : {};
}

/**
 * What observing settles of the keys: the condition and status.credentials on `mr`, the record to
 * persist with the other annotations when this pass changed it, and when to look again.
 */
export function settleRotation<MR extends ManagedResource>(
  kind: NativeKind<MR>,
  mr: MR,
  plan: RotationPlan,
  pass: { retired?: number; pending?: string; now: number; annotations?: Record<string, string> },
): { annotations?: Record<string, string>; recheckAfterMs?: number } {
  const change = recordAnnotation(plan, pass.retired, pass.pending, pass.now);
  // What the resource says is what the record now says (keys published this pass have their grace period already).
  const after = Object.keys(change).length
    ? planRotation({ ...mr, metadata: { ...mr.metadata, annotations: { ...mr.metadata.annotations, ...change } } }, pass.now, false)
    : plan;
  recordRotation(kind, mr, after, pass.pending);
  const annotations = { ...pass.annotations, ...change };
  const recheck = Math.min(plan.recheckAt ?? Infinity, after.recheckAt ?? Infinity);
  return {
    ...(Object.keys(annotations).length ? { annotations } : {}),
    ...(recheck !== Infinity ? { recheckAfterMs: Math.max(0, recheck - pass.now) } : {}),
  };
}

/**
 * The record to persist, when this pass changed it: a rotation, keys removed, or new keys published
 * (the kind read them as working, so this pass publishes them: the grace period of the keys they
 * replace starts now).
 */
function recordAnnotation(
  plan: RotationPlan,
  retired: number | undefined,
  pending: string | undefined,
  now: number,
): Record<string, string> {
  const s = plan.next ?? plan.state;
  const published = s.published ?? 0;
  const publishing = !plan.next && !pending && s.generation > published;
  const record = {
    ...s,
    ...(retired !== undefined ? { retired } : {}),
    ...(publishing
      ? { published: s.generation, publishedAt: new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z'), previous: published }
      : {}),
  };
  return recordOf(record) === recordOf(plan.state) ? {} : { [ANNOTATION_CREDENTIALS]: recordOf(record) };
}

/** The CredentialsRotated condition and status.credentials; none while nothing was ever asked. */
function recordRotation<MR extends ManagedResource>(kind: NativeKind<MR>, mr: MR, plan: RotationPlan, pending?: string): void {
  const why = cannotRotate(kind, mr);
  const asked = mr.metadata.annotations?.[ANNOTATION_ROTATE] !== undefined || Boolean(mr.spec.credentialRotation);
  const { condition, credentials } = rotationStatus(plan, {
    ...(why && asked ? { cannotRotate: why } : {}),
    ...(pending ? { pending } : {}),
  });
  let conditions = mr.status?.conditions;
  if (condition) conditions = setCondition(conditions, { ...condition, observedGeneration: mr.metadata.generation });
  else if (conditions?.some((c) => c.type === CONDITION_ROTATED)) conditions = conditions.filter((c) => c.type !== CONDITION_ROTATED);
  const { credentials: _was, ...status } = mr.status ?? {};
  mr.status = { ...status, ...(conditions ? { conditions } : {}), ...(credentials ? { credentials } : {}) };
}
