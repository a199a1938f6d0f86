// A claim's bucket features (versioning, object lock, a quota, lifecycle rules): what the claim asks,
// filled from its class's defaults and held to its class's limits, and refused where the class's
// backend has no such feature, naming the field. What is wanted lives at a place of the managed
// resource's spec the backend names, and follows the claim there after binding too.
import { ReasonedError } from '../../kit/conditions.ts';
import { sameJson } from '../../kit/json.ts';
import { quantityBytes } from '../../kit/quantity.ts';
import { mergePatchSame } from '../../kit/controller/finalizers.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isInvalid } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import type { Claim } from './claim.ts';

export const FEATURES = ['versioning', 'objectLock', 'defaultRetention', 'quota', 'lifecycle'] as const;
export type FeatureName = (typeof FEATURES)[number];

export interface BucketFeatures {
  versioning?: 'Enabled' | 'Suspended';
  objectLock?: boolean;
  defaultRetention?: { mode: 'Governance' | 'Compliance'; days: number };
  quota?: { size: string };
  lifecycle?: { rules: { id: string; prefix?: string; expirationDays?: number; noncurrentVersionExpirationDays?: number }[] };
}

/** A class's defaults and limits (its spec.features). */
export interface FeaturePolicy {
  defaults?: BucketFeatures;
  forbidden?: FeatureName[];
  maxQuota?: string;
}

/** What a backend offers: the features it has, and where in its managed resource's spec they go. */
export interface FeatureSupport {
  supported: readonly FeatureName[];
  /** Why the backend lacks a feature, where a user would ask. */
  lacks?: Partial<Record<FeatureName, string>>;
  /** Features the store sets only when it makes a bucket, and why: a bound resource keeps its own. */
  fixed?: Partial<Record<FeatureName, string>>;
  path: readonly string[];
  /** What the backend's class itself limits besides its spec.features (a Rook class's maxSize): why these go past it, or undefined. */
  beyond?(cls: ReadonlyDeep<unknown>, features: BucketFeatures): string | undefined;
}

/** Bytes of a quota size (e.g. "10Gi"; the schema allows only whole Mi, Gi and Ti). */
export const quotaBytes = (size: string): number => quantityBytes(size) ?? NaN;

type Cls = { kind?: string; metadata: { namespace?: string; name: string }; spec?: { features?: FeaturePolicy } };

/**
 * The features the claim's bucket gets: the claim's own over its class's defaults, a class's
 * maxQuota when neither sets one. Undefined when none. Throws what the class forbids or its backend
 * lacks.
 */
export function featuresFor(
  claim: ReadonlyDeep<Claim>,
  cls: ReadonlyDeep<Cls>,
  support: FeatureSupport | undefined,
): BucketFeatures | undefined {
  const asked = ((claim.spec as { features?: BucketFeatures } | undefined)?.features ?? {}) as BucketFeatures;
  const policy = (cls.spec?.features ?? {}) as FeaturePolicy;
  const where = `${cls.kind ?? 'class'} ${cls.metadata.namespace}/${cls.metadata.name}`;
  for (const f of FEATURES) {
    if (asked[f] !== undefined && policy.forbidden?.includes(f))
      throw new ReasonedError(Reasons.FeatureNotAllowed, `spec.features.${f}: class ${where} does not allow it`);
  }
  const wanted: BucketFeatures = { ...policy.defaults, ...asked };
  if (!wanted.quota && policy.maxQuota) wanted.quota = { size: policy.maxQuota };
  if (wanted.quota && policy.maxQuota && quotaBytes(wanted.quota.size) > quotaBytes(policy.maxQuota)) {
    throw new ReasonedError(
      Reasons.FeatureNotAllowed,
      `spec.features.quota.size: ${wanted.quota.size} is more than class ${where} allows (maxQuota ${policy.maxQuota})`,
    );
  }
  const present = FEATURES.filter((f) => wanted[f] !== undefined);
  const lacking = present.filter((f) => !support?.supported.includes(f));
  if (lacking.length) {
    const fields = lacking.map((f) => `spec.features.${f}`).join(', ');
    const fromDefaults = lacking.filter((f) => asked[f] === undefined);
    throw new ReasonedError(
      Reasons.FeatureNotSupported,
      `${fields}: the backend of ${where} does not support ${lacking.join(', ')}` +
        (fromDefaults.length ? ` (${fromDefaults.join(', ')} from the class's defaults)` : '') +
        lacking.map((f) => (support?.lacks?.[f] ? ` (${support.lacks[f]})` : '')).join('') +
        (support?.supported.length ? `; it supports ${support.supported.join(', ')}` : '; it supports no bucket features'),
    );
  }
  const past = present.length ? support?.beyond?.(cls, wanted) : undefined;
  if (past) throw new ReasonedError(Reasons.FeatureNotAllowed, past);
  return present.length ? wanted : undefined;
}

/** Whether the claim itself asks for any feature. */
export const claimAsksFeatures = (claim: ReadonlyDeep<Claim>): boolean =>
  (claim.spec as { features?: object } | undefined)?.features !== undefined;

const at = (obj: unknown, path: readonly string[]): unknown =>
  path.reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), obj);

/** Puts the features at their place in a managed resource's spec (configure made the rest). */
export function placeFeatures(spec: Record<string, unknown>, support: FeatureSupport, features: BucketFeatures | undefined): void {
  if (!features) return;
  const parents = support.path.slice(0, -1);
  let o = spec;
  for (const k of parents) o = (o[k] ??= {}) as Record<string, unknown>;
  o[support.path.at(-1)!] = features;
}

/**
 * A bound claim's features, as its class fills and limits them now, reach its resource; what the
 * backend lacks or the class refuses is the claim's error.
 */
export async function followFeatures(
  o: { client: Client; managed: { type: ResourceType }; features?: FeatureSupport },
  { claim, cls, mr }: { claim: ReadonlyDeep<Claim>; cls: ReadonlyDeep<Cls>; mr: ReadonlyDeep<ManagedResource> },
  signal: AbortSignal,
): Promise<void> {
  const wanted = featuresFor(claim, cls, o.features);
  if (!o.features) return;
  const support = o.features;
  // What the bucket cannot change or drop stays; the rest still follows, and the claim says why.
  const have = (at(mr.spec, support.path) ?? {}) as BucketFeatures;
  // Off is as good as unset (object lock false).
  const value = (v: unknown): unknown => (v === false || v === undefined ? null : v);
  const why = (f: FeatureName): string | undefined =>
    support.fixed?.[f] && !sameJson(value(have[f]), value(wanted?.[f]))
      ? `spec.features.${f} cannot change after the bucket is made: ${support.fixed[f]}`
      : lasting(f, have, wanted);
  const kept = FEATURES.flatMap((f) => {
    const because = why(f);
    return because ? [{ f, because }] : [];
  });
  const features = kept.length ? { ...wanted, ...Object.fromEntries(kept.map(({ f }) => [f, have[f]])) } : wanted;
  try {
    await forwardFeatures(o.client, o.managed.type, mr, { features, support }, signal);
  } catch (err) {
    // Refused by the resource's own rules (a claim's versioning Suspended under its class's object
    // lock): the claim's to say, and nothing else of its pass stops for it.
    if (isInvalid(err))
      throw new ReasonedError(Reasons.FeatureNotAllowed, `its ${o.managed.type.kind} refused these features: ${(err as Error).message}`);
    throw err;
  }
  if (kept.length)
    throw new ReasonedError(Reasons.FeatureNotAllowed, kept.map(({ because }) => because).join('; ') + '; the other features were applied');
}

/**
 * Why a bucket keeps a feature its claim no longer gets (the class that filled it dropped it): what
 * its resource's rules refuse to undo once set (featureTransitionRules), as S3 cannot. Undefined
 * when the feature may follow.
 */
function lasting(f: FeatureName, have: BucketFeatures, wanted: BucketFeatures | undefined): string | undefined {
  if (f === 'objectLock')
    return have.objectLock && !wanted?.objectLock
      ? 'spec.features.objectLock stays on: object lock cannot be turned off once on'
      : undefined;
  if (f !== 'versioning' && f !== 'quota' && f !== 'lifecycle') return undefined;
  if (have[f] === undefined || wanted?.[f] !== undefined) return undefined;
  const since = f === 'versioning' ? 'S3 cannot turn versioning off' : 'it can be changed but not removed once set';
  return `spec.features.${f} stays as the bucket has it (${since}); set it on the claim to change it`;
}

/** What the bound resource holds differs from what the claim wants now: the resource is patched to match. */
export async function forwardFeatures(
  client: Client,
  type: ResourceType,
  mr: ReadonlyDeep<ManagedResource>,
  wanted: { features: BucketFeatures | undefined; support: FeatureSupport },
  signal: AbortSignal,
): Promise<void> {
  const { features, support } = wanted;
  const have = at(mr.spec, support.path) as BucketFeatures | undefined;
  if (sameJson(have ?? {}, features ?? {})) return;
  // A merge patch: every feature named, null where none is wanted, so one dropped from the claim goes too.
  const value: Record<string, unknown> = Object.fromEntries(FEATURES.map((f) => [f, features?.[f] ?? null]));
  const patch = support.path.reduceRight<unknown>((inner, k) => ({ [k]: inner }), value);
  // The resource checked may be a stale copy of one since made anew for another claim.
  await mergePatchSame(client, type, mr, { spec: patch }, signal);
}
