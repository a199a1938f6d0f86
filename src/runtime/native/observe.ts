// Observe, the first phase of a pass (pass.ts): reads the target object and its companions, judges
// them by the resource's ownership, and says whether they are up to date, without writing anything to
// the target. It also checks the external name before it reaches a request, and records what the
// kind read of its object in the resource's status.
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { getCondition, ReasonedError } from '../../kit/conditions.ts';
import { objectDrift } from '../../kit/json.ts';
import { ANNOTATION_EXTERNAL_NAME, isDeleting } from '../../kit/meta.ts';
import { isNotFound } from '../../kit/kube/errors.ts';
import { describeRef, refKey, type ObjectRef, type ResourceType } from '../../kit/kube/resources.ts';
import { policyOf } from '../managed/policies.ts';
import type { ExternalObservation, ManagedResource } from '../managed/types.ts';
import { LABEL_OWNER_UID, companionEntry, type Relation } from '../ownership/marks.ts';
import { Reasons, UnprovenError } from '../reasons.ts';
import {
  ANNOTATION_TEARDOWN,
  mayHaveLeftovers,
  retiredLeft,
  supersededMayShow,
  tearsDownWithoutTarget,
  TEARDOWN_REQUIRED,
  unrecordedOnlyAfter,
} from './delete.ts';
import { recordInspection, type Companion, type KindContext, type TargetObject } from './kind.ts';
import type { NativePass } from './pass.ts';
import { retirement, settleRotation } from './rotation.ts';
import type { RotationPlan } from './rotation.ts';

/** A resource's companions as found in the target (by position), how they drifted, and the uids of those to record. */
interface Companions {
  /** The companions this pass wants (what found answers by position). */
  wanted: Companion[];
  found: (TargetObject | undefined)[];
  drift: string[];
  proven: Record<string, string>;
}

export async function observe<MR extends ManagedResource>(pass: NativePass<MR>): Promise<ExternalObservation> {
  const { kind, mr, signal } = pass;
  const name = checkedExternalName(pass.name);
  const ref = pass.target(pass.recorded());
  // Deleting, a cache that saw our object go answers; what its operator made, and our companions,
  // may outlive it (a pass cut off, or the object deleted by others): see mayHaveLeftovers.
  const deleting = isDeleting(mr.metadata);
  const recordedUid = pass.vouchers.recordedUid;
  const observed = await pass.read.get<TargetObject>(
    ref.type,
    { namespace: ref.namespace, name },
    signal,
    deleting ? recordedUid : undefined,
  );
  if (!observed) {
    if (deleting) return { exists: mayHaveLeftovers(kind, recordedUid), upToDate: true };
    // Nothing is made (its Job would take the store's root keys there) in a store whose endpoint is unproven.
    refuseUnprovenUpstream(pass);
    await refuseMovedIdentity(pass, ref);
    return { exists: false, upToDate: false };
  }
  const relation = pass.ownership.relationOf(ref.type, observed);
  // Deleting: only what we may manage is ours to delete; anything else we let go of untouched, but
  // for a teardown whose work is elsewhere (a user in a shared store), which runs all the same.
  if (deleting) return { exists: relation === 'ours' || relation === 'restored' || tearsDownWithoutTarget(pass), upToDate: true };
  pass.ownership.refuseForeign(relation, ref);
  const policy = policyOf(mr.spec as { managementPolicies?: string[] });
  if (policy.onlyObserve) return observeOnly(pass, observed);

  // What the user left unset comes from the target, so adopting an object changes nothing else.
  const lateInitialized = (policy.lateInitialize && kind.lateInitialize?.(mr, observed)) || false;
  const plan = pass.rotation(policy.update);
  const ctx = pass.context(plan);
  const companions = await checkCompanions(pass, observed, relation, ctx);
  refuseUnprovenUpstream(pass);
  if (relation === 'unmarked') refuseUnappliableImport(kind.desired(mr, name, ctx), observed, kind.fixedAtCreation);
  // What the managed resource is to persist (late-initialized fields, the proven object's and endpoint's uids), whatever comes next.
  const annotations = {
    ...pass.ownership.objectRecord(kind.target, observed, relation, pass.now()),
    ...pass.ownership.companionRecord(companions.proven),
  };
  const settled = { lateInitialized, ...(Object.keys(annotations).length ? { annotations } : {}) };
  if (relation !== 'ours') {
    return {
      exists: true,
      upToDate: false,
      ...settled,
      diff: relation === 'restored' ? 'taking back the object of a restored resource' : 'adopting the existing object (import)',
    };
  }
  return inspectOurs(pass, observed, { companions, settled, plan });
}

/**
 * Observe-only (an import read-only): what the kind reads of the object says its state and how to
 * reach it; nothing is adopted or written, and no companion is ours to check.
 */
async function observeOnly<MR extends ManagedResource>(pass: NativePass<MR>, observed: TargetObject): Promise<ExternalObservation> {
  const { client, read, mr, signal } = pass;
  const credentials = pass.context().credentials;
  const upstream = upstreamOf(pass);
  const inspection = await pass.kind.inspect({ client, read, mr, observed, companions: [], credentials, upstream, signal });
  recordInspection(mr, inspection);
  return { exists: true, upToDate: true, connectionDetails: inspection.connectionDetails };
}

/** Our own object: its drift from what this resource wants, and what the kind reads from it (readiness, connection details). */
async function inspectOurs<MR extends ManagedResource>(
  pass: NativePass<MR>,
  observed: TargetObject,
  found: { companions: Companions; settled: Pick<ExternalObservation, 'lateInitialized' | 'annotations'>; plan: RotationPlan },
): Promise<ExternalObservation> {
  const { kind, mr, name, client, read, signal } = pass;
  const { companions, settled, plan } = found;
  const ctx = pass.context(plan);
  const desired = pass.ownership.marked(kind.target, kind.desired(mr, name, ctx));
  const trust = (c: Companion, have: TargetObject) => pass.ownership.trusted(c, have, observed, 'ours');
  const retiring = await retirement(kind, { mr, name, ctx, read, trust }, signal);
  const superseded = supersededLeft(pass, [...companions.wanted, ...(retiring.work ? [retiring.work] : [])]);
  const drift = [
    ...(superseded.length ? [`superseded ${kind.superseded!.type.kind}s ${superseded.map((o) => o.metadata.name).join(', ')}`] : []),
    ...retiredLeft(pass, false).map((ref) => `${ref.type.kind} ${ref.name} no longer wanted`),
    ...objectDrift(desired, observed),
    ...companions.drift,
    ...(retiring.drift ? [retiring.drift] : []),
  ];
  const upstream = upstreamOf(pass);
  const inspection = await kind.inspect({
    ...{ client, read, mr, observed, companions: companions.found },
    ...{ credentials: ctx.credentials, upstream, signal },
  });
  recordInspection(mr, inspection);
  // The companions of retired keys leave the record with the generations they held.
  const annotations = {
    ...settled.annotations,
    ...(retiring.gone ? pass.ownership.companionRecord(companions.proven, retiring.gone) : {}),
    ...(await teardownRecord(pass, ctx, companions, superseded)),
  };
  return {
    exists: true,
    upToDate: drift.length === 0,
    ...settled,
    // The rotation's record (and when to look again) rides with what observing settled.
    ...settleRotation(kind, mr, plan, { retired: retiring.retired, inspection, now: pass.now(), annotations }),
    connectionDetails: inspection.connectionDetails,
    diff: drift.join(', ') || undefined,
  };
}

/**
 * The record that the kind's teardown is needed, once its `onlyAfter` companion is seen reached (a
 * first access Job completed: a user was made, and its keys may have reached an app), the current
 * one or one a changed spec superseded. That companion need not last (the superseded one is
 * deleted once this is recorded), so deleting reads the record; it is never taken back.
 */
async function teardownRecord<MR extends ManagedResource>(
  pass: NativePass<MR>,
  ctx: KindContext,
  companions: Companions,
  superseded: TargetObject[],
): Promise<Record<string, string>> {
  const after = unrecordedOnlyAfter(pass.mr, pass.kind.teardown?.(pass.mr, pass.name, ctx));
  if (!after) return {};
  const { ref } = after;
  const i = companions.wanted.findIndex((c) => refKey(c) === refKey(ref));
  const current =
    i >= 0 ? companions.found[i] : await pass.read.get<TargetObject>(ref.type, { namespace: ref.namespace, name: ref.name }, pass.signal);
  const older = supersededMayShow(pass.kind.superseded, after) ? superseded : [];
  return [current, ...older].some((o) => o && after.reached(o)) ? { [ANNOTATION_TEARDOWN]: TEARDOWN_REQUIRED } : {};
}

async function checkCompanions<MR extends ManagedResource>(
  pass: NativePass<MR>,
  observed: TargetObject,
  main: Relation,
  ctx: KindContext,
): Promise<Companions> {
  const wanted = pass.companions(ctx);
  const found = await Promise.all(
    wanted.map((c) => pass.read.get<TargetObject>(c.type, { namespace: c.namespace, name: c.name }, pass.signal)),
  );
  const drift: string[] = [];
  const proven: Record<string, string> = {};
  wanted.forEach((c, i) => {
    const have = found[i];
    if (!have) {
      if (c.irreplaceable) {
        throw new ReasonedError(
          c.irreplaceable.reason,
          `the ${c.purpose} ${describeRef(c)} is gone while ${describeRef({ type: pass.kind.target, name: pass.name, namespace: observed.metadata.namespace })} still uses it; ` +
            `new ones are not made, because the running store would not know them. ${c.irreplaceable.remedy}`,
        );
      }
      drift.push(`missing ${c.type.kind}`);
      return;
    }
    const verdict = pass.ownership.verdict(c, have, observed, main);
    if (verdict.relation === 'unmarked') return;
    if (pass.ownership.recordable(c) && have.metadata.uid) proven[refKey(c)] = companionEntry(have);
    drift.push(...verdict.drift.map((p) => `${c.type.kind}${p}`));
  });
  return { wanted, found, drift, proven };
}

const OBJECT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The external name: the annotation has no schema, so it is checked before it becomes part of a request. */
export function checkedExternalName(name: string): string {
  if (name.length > 253 || !OBJECT_NAME.test(name)) {
    throw new ReasonedError(
      Reasons.InvalidExternalName,
      `annotation ${ANNOTATION_EXTERNAL_NAME} must be a lower-case DNS-1123 subdomain (a-z, 0-9, "-", ".") of at most 253 characters; it has ${name.length} characters`,
    );
  }
  return name;
}

/** Identity is fixed at creation: a resource whose object now lives under another name or namespace moved. */
async function refuseMovedIdentity<MR extends ManagedResource>(pass: NativePass<MR>, ref: ObjectRef): Promise<void> {
  const { client, marks, mr, signal } = pass;
  const target = pass.kind.target;
  // Only a resource that was created or imported has an object to find (and it costs a list).
  if (!mr.metadata.annotations?.[ANNOTATION_EXTERNAL_NAME]) return;
  // A 404 means the kind is not served (yet): then nothing of it exists anywhere.
  const { items } = await client
    .list<TargetObject>(target, { labelSelector: marks.selectorFor(pass.owner), signal })
    .catch((err: unknown) => {
      if (isNotFound(err)) return { items: [] };
      throw err;
    });
  // Only a signed object counts: copied labels must not hold a resource back.
  const elsewhere = items.find(
    (o) => (o.metadata.name !== ref.name || (o.metadata.namespace ?? undefined) !== ref.namespace) && marks.signed(target, o),
  );
  if (!elsewhere) return;
  throw new ReasonedError(
    Reasons.IdentityChanged,
    `this resource's object in the target cluster is ${describeRef({ ...ref, name: elsewhere.metadata.name, namespace: elsewhere.metadata.namespace })}, ` +
      `but its external-name and target namespace now say ${describeRef(ref)}. These cannot change after creation: set them back, ` +
      'or delete this resource and create a new one',
  );
}

/** Adopting a store must not change what its operator would never apply to it (`fixed`, the kind's fixedAtCreation). */
function refuseUnappliableImport(desired: TargetObject, observed: TargetObject, fixed: string[] = []): void {
  const changed = objectDrift(desired, observed).filter((p) =>
    fixed.some((f) => p === f || p.startsWith(`${f}.`) || p.startsWith(`${f}[`)),
  );
  if (changed.length === 0) return;
  const ref = {
    type: { kind: observed.kind ?? 'object' } as ResourceType,
    name: observed.metadata.name,
    namespace: observed.metadata.namespace,
  };
  throw new ReasonedError(
    Reasons.ImportMismatch,
    `cannot adopt ${describeRef(ref)}: ${changed.join(', ')} differ from this resource's spec, ` +
      'and the operator applies those only when it creates a store. Make the spec match the existing object, or leave those fields unset to take them from it',
  );
}

/**
 * Older Jobs (superseded) of this resource still in the target but those it is `keeping` (the
 * companions this pass wants, and its retire work), as its synced cache holds them: their
 * removal is drift, so it happens at rest too, not only with the next change. Only signed ones count:
 * one that merely carries our labels is never deleted, and must not make a repair every pass.
 */
function supersededLeft<MR extends ManagedResource>(pass: NativePass<MR>, keeping: Companion[]): TargetObject[] {
  const { kind, marks, owner } = pass;
  const s = kind.superseded;
  const cached = s && pass.read.cached?.<TargetObject>(s.type, marks.selector);
  if (!s || !cached) return [];
  const keep = new Set(keeping.map(refKey));
  const left = cached.filter(
    (o) =>
      o.metadata.labels?.[LABEL_OWNER_UID] === owner.uid &&
      s.matches(o.metadata.labels ?? {}) &&
      !o.metadata.deletionTimestamp &&
      !keep.has(refKey({ type: s.type, name: o.metadata.name, namespace: o.metadata.namespace })) &&
      marks.signed(s.type, o),
  );
  return left;
}

/** The managed resource a resource's endpoint comes from (NativeKind.endpointFrom), as cached. */
function upstreamOf<MR extends ManagedResource>(pass: NativePass<MR>): ReadonlyDeep<ManagedResource> | undefined {
  const ref = pass.kind.endpointFrom?.of(pass.mr as ReadonlyDeep<MR>);
  return ref && pass.opts.managed?.get(ref.type, { namespace: pass.mr.metadata.namespace ?? '', name: ref.name });
}

/** A resource whose endpoint is its shared store's is no more proven than that store's (NativeKind.endpointFrom). */
function refuseUnprovenUpstream<MR extends ManagedResource>(pass: NativePass<MR>): void {
  const { mr, opts } = pass;
  const from = pass.kind.endpointFrom;
  const ref = from?.of(mr as ReadonlyDeep<MR>);
  if (!from || !ref || !opts.managed) return;
  const upstream = upstreamOf(pass);
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
