// What proves a resource's companions and endpoint beyond the marks on them, which anyone who may
// write in a target namespace can strip or copy: the uids recorded when provider-rook made them, the
// store its endpoint comes from, and which older Jobs are left to delete.
import type { ResourceType } from '../../kit/kube/resources.ts';
import { policyOf } from '../managed/policies.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons, UnprovenError } from '../reasons.ts';
import { describeRef, refKey, type Companion, type KindContext, type NativeKind, type ObjectReader, type TargetObject } from './kind.ts';
import { ANNOTATION_COMPANION_UIDS, LABEL_OWNER_UID, type Owner, type OwnershipMarks } from '../ownership/marks.ts';
import { retireWork } from './retirement.ts';
import { getCondition } from '../../kit/conditions.ts';

/** The companion uids a resource recorded (ANNOTATION_COMPANION_UIDS); an unreadable record records nothing. */
export function recordedCompanions(mr: ManagedResource): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(mr.metadata.annotations?.[ANNOTATION_COMPANION_UIDS] ?? '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/**
 * The annotation that records `made` (companion identity -> uid) beside what the resource recorded,
 * if that changes it. An entry is never dropped before its object is made again: a copy someone puts
 * in its place meanwhile (signature and all) would be taken for ours.
 */
export function companionRecord(mr: ManagedResource, made: Record<string, string>): Record<string, string> {
  const before = recordedCompanions(mr);
  if (Object.entries(made).every(([k, v]) => before[k] === v)) return {};
  const after = Object.entries({ ...before, ...made }).sort(([a], [b]) => a.localeCompare(b));
  return { [ANNOTATION_COMPANION_UIDS]: JSON.stringify(Object.fromEntries(after)) };
}

/** A companion that cannot be proven: the resource is not Ready, and its Secret withholds the keys that lead there. */
export function unproven(c: Companion, why: string): UnprovenError {
  return new UnprovenError(
    c.publishedAs ? Reasons.EndpointNotProven : Reasons.CompanionNotOwned,
    `the ${c.purpose} ${describeRef(c)} in the target cluster ${why}, so ${c.publishedAs ? 'its address is not published and ' : ''}nothing is written to it. ` +
      'If it is not in use, delete it: provider-rook makes its own again',
    c.publishedAs ?? [],
  );
}

/**
 * Companions are recorded by uid when made or first proven, but for the work the kind supersedes
 * (Jobs: made anew for new keys or policies, their uids are not worth a write each) and the
 * irreplaceable ones (a store's root keys): putting back the very Secret that was lost is their
 * remedy, and a copy of theirs leads nowhere but to the store it names.
 */
export function recordable(kind: Pick<NativeKind<ManagedResource>, 'superseded'>, c: Companion): boolean {
  const work = kind.superseded?.type;
  return !c.irreplaceable && (!work || c.type.apiVersion !== work.apiVersion || c.type.kind !== work.kind);
}

/**
 * Older Jobs (superseded) of this resource still in the target (`wanted`: the companions this pass
 * already built, not built again), as its synced cache holds them: their
 * removal is drift, so it happens at rest too, not only with the next change. Only signed ones count:
 * one that merely carries our labels is never deleted, and must not make a repair every pass.
 */
export function supersededLeft<MR extends ManagedResource>(
  { kind, marks, read }: { kind: NativeKind<MR>; marks: OwnershipMarks; read: ObjectReader },
  mr: MR,
  owner: Owner,
  { name, ctx, wanted }: { name: string; ctx: KindContext; wanted: Companion[] },
): string | undefined {
  const s = kind.superseded;
  const cached = s && read.cached?.<TargetObject>(s.type, marks.selector);
  if (!s || !cached) return undefined;
  const retire = retireWork(kind, mr, name, ctx);
  const keep = new Set([...wanted, ...(retire ? [retire.object] : [])].map(refKey));
  const left = cached.filter(
    (o) =>
      o.metadata.labels?.[LABEL_OWNER_UID] === owner.uid &&
      s.matches(o.metadata.labels ?? {}) &&
      !o.metadata.deletionTimestamp &&
      !keep.has(refKey({ type: s.type, name: o.metadata.name, namespace: o.metadata.namespace })) &&
      marks.signed(s.type, o),
  );
  return left.length ? `superseded ${s.type.kind}s ${left.map((o) => o.metadata.name).join(', ')}` : undefined;
}

/** A resource whose endpoint is its shared store's is no more proven than that store's (NativeKind.endpointFrom). */
export function refuseUnprovenUpstream<MR extends ManagedResource>(
  kind: NativeKind<MR>,
  managed: { get(type: ResourceType, namespace: string, name: string): ManagedResource | undefined } | undefined,
  mr: MR,
): void {
  const from = kind.endpointFrom;
  const ref = from?.of(mr);
  if (!from || !ref || !managed) return;
  const upstream = managed.get(ref.type, mr.metadata.namespace ?? '', ref.name);
  if (upstream && policyOf(upstream.spec as { managementPolicies?: string[] }).onlyObserve) {
    throw new UnprovenError(
      Reasons.EndpointNotProven,
      `its store ${ref.type.kind} ${mr.metadata.namespace}/${ref.name} is only observed: provider-rook made no endpoint Service for it, so none is published here and nothing is made in it`,
      from.keys,
    );
  }
  const ready = getCondition(upstream?.status?.conditions, 'Ready');
  if (ready?.status !== 'False' || ready.reason !== Reasons.EndpointNotProven) return;
  throw new UnprovenError(
    Reasons.EndpointNotProven,
    `its store ${ref.type.kind} ${mr.metadata.namespace}/${ref.name} cannot prove its endpoint, so neither is published here: ${ready.message ?? ready.reason}`,
    from.keys,
  );
}
