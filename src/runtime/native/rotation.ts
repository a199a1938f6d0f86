// Credential rotation, dual-key. A resource's keys are derived per generation (KindContext.credential
// with the generation in the purpose), so a rotation is a step of the generation: the new keys are
// made beside the old, published once they work, and the old ones are removed when the class's grace
// period ends. The generation is kept in an annotation, not in status: a restored resource must not
// go back to keys that were removed. Rotating again before the grace ends removes the older keys at
// once (the way to revoke keys that leaked).
import { createHash } from 'node:crypto';
import { getCondition, ReasonedError, setCondition, type Condition } from '../../kit/conditions.ts';
import type { ManagedResource } from '../managed/types.ts';
import { ANNOTATION_ROTATE, CONDITION_ROTATED } from '../labels.ts';
import { Reasons } from '../reasons.ts';
import type { Companion, CredentialsView, Inspection, KindContext, NativeKind, ObjectReader, TargetObject } from './kind.ts';

/** Written by provider-rook: the generation in use, when it began, the request it answered, and the last generation removed. */
export const ANNOTATION_CREDENTIALS = 'rook.crossplane.io/credentials';
const DEFAULT_GRACE = '1h';

export interface RotationSettings {
  /** How long the previous keys keep working after a rotation (a duration such as 30s, 10m, 1h). */
  gracePeriod?: string;
  /** Rotate this long after the last rotation (or the creation). */
  every?: string;
}

export interface CredentialsState {
  /** The generation keys are derived for: made in the store, or being made. */
  generation: number;
  rotatedAt?: string;
  request?: string;
  /** Every generation up to this one is removed from the store (-1: none yet). */
  retired: number;
  /** The generation whose keys the connection Secret holds (0 until a rotation's keys work), since when, and the one it replaced. */
  published?: number;
  publishedAt?: string;
  previous?: number;
}

/** What a kind sees: the generation to derive keys for, older ones not yet removed, and those of them to remove now. */
export interface RotationPlan {
  state: CredentialsState;
  /** A rotation to record now (requested, or scheduled), before anything is made with its keys. */
  next?: CredentialsState;
  view: CredentialsView;
  /** When to look again (the grace period's or the schedule's end), in ms since the epoch. */
  recheckAt?: number;
  /** The previous keys work until then (ms since the epoch), when a grace period is running. */
  previousUntil?: number;
  /** Why the previous keys stay past their grace period (a consumer does not hold the new ones yet). */
  held?: string;
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** "90s", "10m", "1h30m", "30d": the schema admits only these, and the runtime reads them again. */
export const DURATION = /^([0-9]{1,6}(s|m|h|d))+$/;
export function durationMs(text: string): number {
  if (!DURATION.test(text))
    throw new ReasonedError(Reasons.InvalidRotationSettings, `"${text}" is not a duration such as 30s, 10m, 1h or 30d`);
  return [...text.matchAll(/([0-9]+)(s|m|h|d)/g)].reduce((sum, m) => sum + Number(m[1]) * UNITS[m[2]!]!, 0);
}

const INITIAL: CredentialsState = { generation: 0, retired: -1 };

/** The recorded state; an annotation someone edited into nonsense is refused rather than guessed at. */
export function credentialsState(mr: ManagedResource): CredentialsState {
  const text = mr.metadata.annotations?.[ANNOTATION_CREDENTIALS];
  if (!text) return INITIAL;
  let parsed: Partial<CredentialsState>;
  try {
    parsed = (JSON.parse(text) as Partial<CredentialsState> | null) ?? {};
  } catch {
    parsed = {};
  }
  const { generation, retired, rotatedAt, request, published, publishedAt, previous } = parsed;
  const optionalGeneration = (g: unknown) =>
    g === undefined || (Number.isSafeInteger(g) && (g as number) >= 0 && (g as number) <= generation!);
  // A time that does not read as one would count a grace period from every pass: it would never end.
  const optionalTime = (t: unknown) => t === undefined || (typeof t === 'string' && !Number.isNaN(Date.parse(t)));
  if (
    !Number.isSafeInteger(generation) ||
    !Number.isSafeInteger(retired) ||
    generation! < 0 ||
    retired! < -1 ||
    retired! >= generation! ||
    !optionalGeneration(published) ||
    !optionalGeneration(previous) ||
    !optionalTime(rotatedAt) ||
    !optionalTime(publishedAt)
  ) {
    throw new ReasonedError(
      Reasons.InvalidRotationSettings,
      `annotation ${ANNOTATION_CREDENTIALS} is provider-rook's record of which keys are in use, and it no longer reads as one: restore it (or remove it to go back to the first keys)`,
    );
  }
  return {
    generation: generation!,
    retired: retired!,
    ...(typeof rotatedAt === 'string' ? { rotatedAt } : {}),
    ...(typeof request === 'string' ? { request } : {}),
    ...(published !== undefined ? { published } : {}),
    ...(typeof publishedAt === 'string' ? { publishedAt } : {}),
    ...(previous !== undefined ? { previous } : {}),
  };
}

export const recordOf = (state: CredentialsState): string => JSON.stringify(state);
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const range = (from: number, to: number): number[] => Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);

/**
 * The oldest generations that may go, up to the first that may not: removing them records every
 * generation up to the highest as removed (`retired`), so none may be passed over. One can be: a
 * scheduled rotation that starts while the last one's keys are still being made leaves those
 * keys never published, younger than the replaced ones still in their grace period.
 */
function oldestFirst(generations: number[], mayGo: (g: number) => boolean): number[] {
  const stay = generations.findIndex((g) => !mayGo(g));
  return stay === -1 ? generations : generations.slice(0, stay);
}

/** The schedule's floor, and the least time between two requested rotations: a rotation every few seconds would only churn users and Jobs. */
const MIN_EVERY_MS = 10_000;
/** The longest grace period: previous keys that keep working for years are not previous keys. */
export const MAX_GRACE = '90d';

/**
 * A rotation request as recorded: the annotation's value when short, else a digest of it, so that no
 * value, however long, is copied into another object's annotations.
 */
export function rotationRequest(value: string | undefined): string | undefined {
  if (value === undefined || value.length <= 63) return value;
  return `sha256-${createHash('sha256').update(value).digest('hex').slice(0, 32)}`;
}

/**
 * What this pass does with the resource's keys, at `now`. `rotate` is false where keys are not the
 * kind's to rotate, and where nothing may be written (then only the recorded state counts). Keys
 * older than the published ones are removed: the one they replaced when its grace period ends,
 * counted from the publication (apps cannot have the new keys before), anything older at once.
 */
export function planRotation(mr: ManagedResource, now: number, rotate: boolean): RotationPlan {
  const state = credentialsState(mr);
  const settings = (mr.spec as { credentialRotation?: RotationSettings }).credentialRotation ?? {};
  const request = rotationRequest(mr.metadata.annotations?.[ANNOTATION_ROTATE]);
  const since = Date.parse(state.rotatedAt ?? mr.metadata.creationTimestamp ?? '') || now;
  const every = settings.every ? durationMs(settings.every) : undefined;
  const grace = durationMs(settings.gracePeriod ?? DEFAULT_GRACE);
  if (grace > durationMs(MAX_GRACE)) {
    throw new ReasonedError(
      Reasons.InvalidRotationSettings,
      `spec.credentialRotation.gracePeriod (${settings.gracePeriod}) is longer than the longest allowed, ${MAX_GRACE}`,
    );
  }
  if (every !== undefined && (every < MIN_EVERY_MS || every <= grace)) {
    throw new ReasonedError(
      Reasons.InvalidRotationSettings,
      `spec.credentialRotation.every (${settings.every}) must be at least 10s and longer than gracePeriod (${settings.gracePeriod ?? DEFAULT_GRACE}), so that one grace period ends before the next rotation`,
    );
  }
  const requested = request !== undefined && request !== state.request;
  // Requests coalesce: none is answered while the keys of the last rotation are still being made, nor
  // sooner than MIN_EVERY_MS after it; the latest value is answered then, once.
  const making = state.generation > (state.published ?? 0);
  const lastAt = Date.parse(state.rotatedAt ?? '') || 0;
  const requestWaits = requested && (making || now < lastAt + MIN_EVERY_MS);
  const scheduled = every !== undefined && now >= since + every;
  const next =
    rotate && ((requested && !requestWaits) || scheduled)
      ? { ...state, generation: state.generation + 1, rotatedAt: iso(now), ...(request !== undefined ? { request } : {}) }
      : undefined;
  const s = next ?? state;
  const outstanding = range(s.retired + 1, s.generation);
  const published = s.published ?? 0;
  const inGrace = s.previous !== undefined && s.previous > s.retired ? (Date.parse(s.publishedAt ?? '') || now) + grace : undefined;
  const previousUntil = inGrace !== undefined && now < inGrace ? inGrace : undefined;
  // Never the published keys, nor newer ones being made; the replaced ones once their grace period ends.
  const due = oldestFirst(outstanding, (g) => g < published && !(g === s.previous && previousUntil !== undefined));
  const waits = [
    ...(previousUntil !== undefined ? [previousUntil] : []),
    // A request held only by the floor is answered when it ends (one held by keys being made, when they are published: a write wakes it).
    ...(rotate && !next && requestWaits && !making ? [lastAt + MIN_EVERY_MS] : []),
    ...(rotate && every !== undefined ? [(Date.parse(s.rotatedAt ?? '') || since) + every] : []),
  ];
  return {
    state,
    ...(next ? { next } : {}),
    view: { generation: s.generation, outstanding, due },
    ...(waits.length ? { recheckAt: Math.min(...waits) } : {}),
    ...(previousUntil !== undefined ? { previousUntil } : {}),
  };
}

/** What the resource says of its keys: the condition, and status.credentials for its column. */
export function rotationStatus(
  plan: RotationPlan,
  opts: { cannotRotate?: string; pending?: string },
): {
  condition?: Omit<Condition, 'lastTransitionTime'>;
  credentials?: { generation: number; rotatedAt: string; previousValidUntil?: string };
} {
  if (opts.cannotRotate) {
    return { condition: { type: CONDITION_ROTATED, status: 'False', reason: Reasons.RotationNotSupported, message: opts.cannotRotate } };
  }
  const s = plan.next ?? plan.state;
  if (s.generation === 0 || !s.rotatedAt) return {};
  const credentials = {
    generation: s.generation,
    rotatedAt: s.rotatedAt,
    ...(plan.previousUntil !== undefined ? { previousValidUntil: iso(plan.previousUntil) } : {}),
  };
  if (opts.pending)
    return { credentials, condition: { type: CONDITION_ROTATED, status: 'False', reason: Reasons.Rotating, message: opts.pending } };
  const previous =
    plan.previousUntil !== undefined
      ? `the previous keys keep working until ${credentials.previousValidUntil}`
      : (plan.held ?? (plan.view.outstanding.length ? 'the previous keys are being removed' : 'the previous keys are removed'));
  return {
    credentials,
    condition: {
      type: CONDITION_ROTATED,
      status: 'True',
      reason: Reasons.Rotated,
      message: `keys of generation ${s.generation} in use since ${s.rotatedAt}; ${previous}`,
    },
  };
}

// A native kind's side of rotation: the work that removes keys whose grace period ended, made like
// a companion and waited for, and what the resource says of its keys.

const GENERIC = "provider-rook cannot rotate this backend's keys";

/** Why the keys of `mr` cannot rotate, or undefined when they can. */
export function cannotRotate<MR extends ManagedResource>(kind: NativeKind<MR>, mr: MR): string | undefined {
  return kind.rotation ? kind.rotation.cannotRotate?.(mr) : (kind.cannotRotate ?? GENERIC);
}

/** How soon keys whose removal a consumer holds are looked at again. */
const HELD_RECHECK_MS = 30_000;

/**
 * This pass's plan: no rotation where the keys cannot rotate, or where nothing may be written to the
 * target. While something still holds the replaced keys (`held` says what: a consumer without the
 * new ones), they stay: only older ones are due.
 */
export function planFor<MR extends ManagedResource>(
  kind: NativeKind<MR>,
  mr: MR,
  now: number,
  mayWrite: boolean,
  held?: string,
): RotationPlan {
  const plan = planRotation(mr, now, mayWrite && cannotRotate(kind, mr) === undefined);
  const previous = plan.next?.previous ?? plan.state.previous;
  if (!held || previous === undefined || !plan.view.due.includes(previous)) return plan;
  // Nothing wakes the resource when its consumers catch up (that is the claim's status): it looks again soon.
  const recheckAt = Math.min(plan.recheckAt ?? Infinity, now + HELD_RECHECK_MS);
  return { ...plan, view: { ...plan.view, due: oldestFirst(plan.view.due, (g) => g !== previous) }, recheckAt, held };
}

/** The retire work this pass wants (generations past their grace period), if any. */
export function retireWork<MR extends ManagedResource>(
  kind: NativeKind<MR>,
  mr: MR,
  name: string,
  ctx: KindContext,
): ReturnType<NonNullable<NonNullable<NativeKind<MR>['rotation']>['retire']>> | undefined {
  return ctx.credentials.due.length && kind.rotation?.retire ? kind.rotation.retire(mr, name, ctx) : undefined;
}

/** The companions holding generations past their grace period, where deleting them retires those (Rotation.retiredBy). */
export function retiredBy<MR extends ManagedResource>(kind: NativeKind<MR>, mr: MR, name: string, ctx: KindContext): Companion[] {
  return ctx.credentials.due.length && kind.rotation?.retiredBy ? kind.rotation.retiredBy(mr, name, ctx) : [];
}

/**
 * Where removing old keys stands: `drift` while its work is to be made or still runs, `retired`
 * once it is done (the highest generation it removed), with `gone`, the companions that held them
 * and are no more; `work`, the companion doing it, if any. Failed work is drift too: apply makes it again, and says it failed.
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
): Promise<{ drift?: string; retired?: number; gone?: Companion[]; work?: Companion }> {
  const generations = ctx.credentials.due.join(', ');
  const work = retireWork(kind, mr, name, ctx);
  // The work is kept, not swept as superseded, whichever way the keys are retired.
  const keep = work ? { work: work.object } : {};
  const held = retiredBy(kind, mr, name, ctx);
  if (held.length) {
    const found = await Promise.all(held.map((c) => read.get<TargetObject>(c.type, { namespace: c.namespace, name: c.name }, signal)));
    // Only what is ours is deleted (apply): anything else in its place stops the rotation, said as such.
    found.forEach((have, i) => have && trust(held[i]!, have));
    return found.some(Boolean)
      ? { drift: `removing keys of generation ${generations}`, ...keep }
      : { retired: Math.max(...ctx.credentials.due), gone: held, ...keep };
  }
  if (!work) return {};
  const { object } = work;
  const have = await read.get<TargetObject>(object.type, { namespace: object.namespace, name: object.name }, signal);
  if (!have) return { drift: `removing keys of generation ${generations}`, ...keep };
  trust(object, have);
  const outcome = work.outcome(have);
  // Drift, not an error here: apply makes the work again (and says it failed), where an error would
  // stop every pass of the resource until the Job's time to live ended.
  if ('failed' in outcome) return { drift: `the work removing keys of generation ${generations} failed, and is made again`, ...keep };
  return outcome.done ? { retired: Math.max(...ctx.credentials.due), ...keep } : keep;
}

/**
 * What observing settles of the keys: the condition and status.credentials on `mr`, the record to
 * persist with the other annotations when this pass changed it, and when to look again.
 */
export function settleRotation<MR extends ManagedResource>(
  kind: NativeKind<MR>,
  mr: MR,
  plan: RotationPlan,
  pass: { retired?: number; inspection: Inspection; now: number; annotations?: Record<string, string> },
): { annotations?: Record<string, string>; recheckAfterMs?: number } {
  // New keys are published only once the kind reads them as working, and the resource as ready: a
  // kind that is not ready says nothing of the new keys, which may not work yet.
  const s = plan.next ?? plan.state;
  const making = s.generation > (s.published ?? 0);
  const { rotating, ready, message } = pass.inspection;
  const pending = rotating ?? (making && !ready ? (message ?? 'waiting for the resource to be ready') : undefined);
  const change = recordAnnotation(plan, pass.retired, pending, pass.now);
  // What the resource says is what the record now says (keys published this pass have their grace period already).
  const after = Object.keys(change).length
    ? {
        ...planRotation({ ...mr, metadata: { ...mr.metadata, annotations: { ...mr.metadata.annotations, ...change } } }, pass.now, false),
        ...(plan.held ? { held: plan.held } : {}),
      }
    : plan;
  recordRotation(kind, mr, after, pending);
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
  else if (conditions && getCondition(conditions, CONDITION_ROTATED)) conditions = conditions.filter((c) => c.type !== CONDITION_ROTATED);
  const { credentials: _was, ...status } = mr.status ?? {};
  mr.status = { ...status, ...(conditions ? { conditions } : {}), ...(credentials ? { credentials } : {}) };
}
