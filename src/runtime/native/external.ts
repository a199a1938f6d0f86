// nativeExternal: the generic ExternalClient for "the external resource is a Kubernetes object in
// another cluster". A small per-kind description (NativeKind, kind.ts) says what object to keep
// there; this file does observe / diff / apply, ownership and companion objects. The target
// namespace is handled in namespaces.ts, a first create in apply.ts, deleting owned objects in
// deletion.ts, what proves companions beyond their marks in proof.ts. It stays past 400 lines on
// purpose: observe, apply and delete judge the same objects by the same trust rules (trusted,
// refuseForeign), which split apart would travel as callbacks.
import { ReasonedError } from '../../kit/conditions.ts';
import { RecordedError } from '../managed/types.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { KubeClient } from '../../kit/kube/client.ts';
import { ANNOTATION_EXTERNAL_NAME, externalNameOf, isDeleting } from '../../kit/meta.ts';
import {
  reclaimPolicyOf,
  type ConnectionDetails,
  type ExternalClient,
  type ExternalCreation,
  type ExternalDeletion,
  type ExternalObservation,
  type ManagedResource,
} from '../managed/types.ts';
import { deleteIfOurs, deleteOwned, deleteSuperseded, mayHaveLeftovers } from './delete.ts';
import { policyOf } from '../managed/policies.ts';
import { retain, tearDown, type TeardownAccess } from './teardown.ts';
import {
  checkedExternalName,
  importRequested,
  recordInspection,
  refuseMovedIdentity,
  refuseUnappliableImport,
  uidRecord,
  vouchersOf,
  withoutMetadata,
} from './observe.ts';
import { planFor, retireWork, retirement, settleRotation } from './retirement.ts';
import type { RotationPlan } from './rotation.ts';
import {
  describeRef,
  diffFields,
  refKey,
  type Companion,
  type NativeKind,
  type ObjectReader,
  type KindContext,
  type ObjectRef,
  type TargetObject,
} from './kind.ts';
import { ensureNamespace } from './namespaces.ts';
import { createFresh } from './apply.ts';
import { companionRecord, recordable, recordedCompanions, refuseUnprovenUpstream, supersededLeft, unproven } from './proof.ts';
import { ANNOTATION_OWNER_PROOF, ANNOTATION_TARGET_UID, type OwnershipMarks, type Owner, type Relation } from '../ownership/marks.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { Reasons } from '../reasons.ts';

/** What kinds may ask of the runtime: credentials derived from the ownership key, and which generation of rotating keys to use. */
export const kindContext = (marks: OwnershipMarks, plan?: RotationPlan): KindContext => ({
  credential: (purpose, length) => marks.credential(purpose, length),
  credentials: plan?.view ?? { generation: 0, outstanding: [], due: [] },
});

export function ownerOf(resource: string, mr: ManagedResource): Owner {
  return {
    resource,
    namespace: mr.metadata.namespace ?? '',
    name: mr.metadata.name,
    uid: mr.metadata.uid ?? '',
    // Without Delete among its policies the object is orphaned: its marks say so, and no sweep takes it.
    reclaimPolicy: policyOf(mr.spec as { managementPolicies?: string[] }).delete ? reclaimPolicyOf(mr.spec) : 'Orphan',
  };
}

/** A resource's companions as found in the target (by position), how they drifted, and the uids of those to record. */
interface Companions {
  /** The companions this pass wants (what found answers by position). */
  wanted: Companion[];
  found: (TargetObject | undefined)[];
  drift: string[];
  proven: Record<string, string>;
}

export interface NativeExternalOptions {
  /**
   * Observe reads through it (the target's watch caches). Writes check ownership on a cached copy
   * only where the write is conditional on that copy (a delete's uid and resourceVersion); else live.
   */
  reader?: ObjectReader;
  /** Runs before every write to the target (e.g. making sure the operator is installed). */
  prerequisite?: (signal: AbortSignal) => Promise<void>;
  /** Says what we decided not to delete, and why. */
  recorder?: EventRecorder;
  /** The clock rotation reads (tests move it). */
  now?: () => number;
  /** Managed resources of the control cluster (from caches) another one's endpoint comes from: see NativeKind.endpointFrom. */
  managed?: { get(type: ResourceType, namespace: string, name: string): ManagedResource | undefined };
  /**
   * Why the keys a rotation replaced must keep working past their grace period (a consumer of the
   * claim does not hold the new ones yet), or undefined: while it says why, they are not removed.
   */
  retirementHold?: (mr: ManagedResource) => string | undefined;
}

export class NativeExternal<MR extends ManagedResource> implements ExternalClient<MR> {
  private readonly kind: NativeKind<MR>;
  private readonly client: KubeClient;
  private readonly marks: OwnershipMarks;
  private readonly opts: NativeExternalOptions;
  private readonly read: ObjectReader;
  private readonly now: () => number;

  constructor(kind: NativeKind<MR>, client: KubeClient, marks: OwnershipMarks, opts: NativeExternalOptions = {}) {
    this.kind = kind;
    this.client = client;
    this.marks = marks;
    this.opts = opts;
    this.read = opts.reader ?? client;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The kind's context for this resource, from its recorded keys only: a rotation is decided (and
   * recorded) by observe, so a write never uses keys the record does not name.
   */
  private ctx(mr: MR): KindContext {
    return kindContext(this.marks, planFor(this.kind, mr, this.now(), false));
  }

  private teardownAccess(mr: MR): TeardownAccess {
    return {
      client: this.client,
      read: this.read,
      marks: this.marks,
      warn: (reason, message) => this.opts.recorder?.warning(mr, reason, message),
    };
  }

  private owner(mr: MR): Owner {
    return ownerOf(this.kind.resource, mr);
  }

  /** Throws why this resource may not act on the object at `ref`, unless it may. */
  private refuseForeign(mr: MR, relation: Relation, ref: ObjectRef): void {
    if (relation === 'another') {
      throw new ReasonedError(
        Reasons.ExternalResourceOwnedByAnother,
        `${describeRef(ref)} in the target cluster belongs to another managed resource; it is never adopted. Choose another name`,
      );
    }
    if (relation === 'unproven') {
      throw new ReasonedError(
        Reasons.ExternalResourceOwnedByAnother,
        `${describeRef(ref)} in the target cluster carries provider-rook's marks for this resource, but nothing proves that provider-rook made it for this very resource ` +
          '(its signature does not verify and this resource did not record its uid): it was left as it is. If it is the object of this resource, ' +
          `a platform team can vouch for it by setting annotation ${ANNOTATION_TARGET_UID} on this resource to the object's uid`,
      );
    }
    if (relation === 'unmarked' && !importRequested(mr)) {
      throw new ReasonedError(
        Reasons.ExternalResourceConflict,
        `${describeRef(ref)} already exists in the target cluster and is not owned by this resource; it was left untouched. ` +
          `A platform team can adopt it by creating a managed resource with the ${ANNOTATION_EXTERNAL_NAME} annotation; otherwise choose another name`,
      );
    }
  }

  async observe(mr: MR, signal: AbortSignal): Promise<ExternalObservation> {
    const name = checkedExternalName(mr);
    const owner = this.owner(mr);
    const ref = { type: this.kind.target, name, namespace: this.kind.desired(mr, name, this.ctx(mr)).metadata.namespace };
    // Deleting, a cache that saw our object go answers; what its operator made, and our companions,
    // may outlive it (a pass cut off, or the object deleted by others): see mayHaveLeftovers.
    const [deleting, recordedUid] = [isDeleting(mr.metadata), vouchersOf(mr).recordedUid];
    const observed = await this.read.get<TargetObject>(ref.type, name, ref.namespace, signal, deleting ? recordedUid : undefined);
    if (!observed) {
      if (deleting) return { exists: mayHaveLeftovers(this.kind, recordedUid), upToDate: true };
      // Nothing is made (its Job would take the store's root keys there) in a store whose endpoint is unproven.
      refuseUnprovenUpstream(this.kind, this.opts.managed, mr);
      await refuseMovedIdentity(this.client, this.marks, this.kind.target, mr, owner, ref, signal);
      return { exists: false, upToDate: false };
    }
    const relation = this.marks.relation(ref.type, observed, owner, vouchersOf(mr));
    // Deleting: only what we may manage is ours to delete; anything else we let go of untouched.
    if (isDeleting(mr.metadata)) return { exists: relation === 'ours' || relation === 'restored', upToDate: true };
    this.refuseForeign(mr, relation, ref);
    const policy = policyOf(mr.spec as { managementPolicies?: string[] });
    if (policy.onlyObserve) return this.observeOnly(mr, observed, signal);

    // What the user left unset comes from the target, so adopting an object changes nothing else.
    const lateInitialized = (policy.lateInitialize && this.kind.lateInitialize?.(mr, observed)) || false;
    const plan = holdRetirement(planFor(this.kind, mr, this.now(), policy.update), this.opts.retirementHold?.(mr));
    const ctx = kindContext(this.marks, plan);
    const companions = await this.checkCompanions(mr, name, observed, relation, ctx, signal);
    refuseUnprovenUpstream(this.kind, this.opts.managed, mr);
    if (relation === 'unmarked') refuseUnappliableImport(this.kind.desired(mr, name, ctx), observed, this.kind.fixedAtCreation);
    // What the managed resource is to persist (late-initialized fields, the proven object's and endpoint's uids), whatever comes next.
    const proven = uidRecord(this.marks, mr, ref.type, observed, relation).annotations;
    const annotations = { ...proven, ...companionRecord(mr, companions.proven) };
    const settled = { lateInitialized, ...(Object.keys(annotations).length ? { annotations } : {}) };
    if (relation !== 'ours') {
      return {
        exists: true,
        upToDate: false,
        ...settled,
        diff: relation === 'restored' ? 'taking back the object of a restored resource' : 'adopting the existing object (import)',
      };
    }
    return this.inspectOurs(mr, name, owner, observed, companions, settled, plan, signal);
  }

  /**
   * Observe-only (an import read-only): what the kind reads of the object says its state and how to
   * reach it; nothing is adopted or written, and no companion is ours to check.
   */
  private async observeOnly(mr: MR, observed: TargetObject, signal: AbortSignal): Promise<ExternalObservation> {
    const { client, read } = this;
    const inspection = await this.kind.inspect({
      client,
      read,
      mr,
      observed,
      companions: [],
      credentials: kindContext(this.marks).credentials,
      signal,
    });
    recordInspection(mr, inspection);
    return { exists: true, upToDate: true, connectionDetails: inspection.connectionDetails };
  }

  /** Our own object: its drift from what this resource wants, and what the kind reads from it (readiness, connection details). */
  private async inspectOurs(
    mr: MR,
    name: string,
    owner: Owner,
    observed: TargetObject,
    { wanted, found, drift: companionDrift }: Companions,
    settled: Pick<ExternalObservation, 'lateInitialized' | 'annotations'>,
    plan: RotationPlan,
    signal: AbortSignal,
  ): Promise<ExternalObservation> {
    const ctx = kindContext(this.marks, plan);
    const desired = this.marks.mark(this.kind.target, this.kind.desired(mr, name, ctx), owner);
    const trust = (c: Companion, have: TargetObject) => this.trusted(mr, c, have, observed, 'ours');
    const retiring = await retirement(this.kind, { mr, name, ctx, read: this.read, trust }, signal);
    const superseded = supersededLeft({ kind: this.kind, marks: this.marks, read: this.read }, mr, owner, { name, ctx, wanted });
    const drift = [
      ...(superseded ? [superseded] : []),
      ...diffFields(withoutMetadata(desired), withoutMetadata(observed)),
      ...diffFields(
        { labels: desired.metadata.labels, annotations: desired.metadata.annotations },
        { labels: observed.metadata.labels, annotations: observed.metadata.annotations },
      ).map((p) => `.metadata${p}`),
      ...companionDrift,
      ...(retiring.drift ? [retiring.drift] : []),
    ];
    const { client, read } = this;
    const inspection = await this.kind.inspect({ client, read, mr, observed, companions: found, credentials: ctx.credentials, signal });
    recordInspection(mr, inspection);
    return {
      exists: true,
      upToDate: drift.length === 0,
      ...settled,
      // The rotation's record (and when to look again) rides with what observing settled.
      ...settleRotation(this.kind, mr, plan, {
        ...retiring,
        pending: inspection.rotating,
        now: this.now(),
        annotations: settled.annotations,
      }),
      connectionDetails: inspection.connectionDetails,
      diff: drift.join(', ') || undefined,
    };
  }

  /**
   * Companions are used only when we made them for this resource, or (on import) when the adopted
   * object names them itself: a resource can never point us at someone else's Secret. An import
   * cannot change what the object names (fixedAtCreation), so this holds after adoption too.
   * `main` is how the target object itself relates: a restored one brings its signed companions.
   */
  private trusted(mr: MR, c: Companion, have: TargetObject, observed: TargetObject | undefined, main: Relation | undefined): Relation {
    // A companion whose uid was recorded is that very object: its marks may have been stripped, and a copy's never prove it.
    const recorded = recordable(this.kind, c) && recordedCompanions(mr)[refKey(c)];
    if (recorded) {
      if (have.metadata.uid === recorded) return 'ours';
      throw unproven(c, 'is not the object provider-rook made for this resource (it was replaced)');
    }
    const relation = this.marks.relation(c.type, have, this.owner(mr), {
      ...vouchersOf(mr),
      recordedUid: undefined,
      restoring: main === 'restored',
    });
    if (relation === 'ours' || relation === 'restored') return relation;
    if (
      relation === 'unmarked' &&
      observed &&
      importRequested(mr) &&
      // Only in the adopted object's own namespace: whoever made it could name any Secret elsewhere.
      c.namespace === observed.metadata.namespace &&
      (this.kind.references?.(observed) ?? []).some((r) => refKey(r) === refKey(c))
    )
      return relation;
    if (c.publishedAs) throw unproven(c, 'was not made by provider-rook for this resource');
    throw new ReasonedError(
      Reasons.CompanionNotOwned,
      `the ${c.purpose} ${describeRef(c)} exists in the target cluster but was not made by provider-rook for this resource, so it is not used. ` +
        'Only objects provider-rook made for a resource (proven by its signed marks), or those an imported object names itself, are used',
    );
  }

  /** Our marks on a companion differ from what this resource signs now (restored, legacy, new reclaim policy). */
  private remark(mr: MR, c: Companion, have: TargetObject): boolean {
    const want = this.marks.mark(c.type, { metadata: { name: c.name, namespace: c.namespace } }, this.owner(mr));
    return want.metadata.annotations[ANNOTATION_OWNER_PROOF] !== have.metadata.annotations?.[ANNOTATION_OWNER_PROOF];
  }

  private async checkCompanions(
    mr: MR,
    name: string,
    observed: TargetObject,
    main: Relation,
    ctx: KindContext,
    signal: AbortSignal,
  ): Promise<Companions> {
    const wanted = this.kind.companions?.(mr, name, ctx) ?? [];
    const found = await Promise.all(wanted.map((c) => this.read.get<TargetObject>(c.type, c.name, c.namespace, signal)));
    const drift: string[] = [];
    const proven: Record<string, string> = {};
    wanted.forEach((c, i) => {
      const have = found[i];
      if (!have) {
        if (c.irreplaceable) {
          throw new ReasonedError(
            c.irreplaceable.reason,
            `the ${c.purpose} ${describeRef(c)} is gone while ${describeRef({ type: this.kind.target, name, namespace: observed.metadata.namespace })} still uses it; ` +
              `new ones are not made, because the running store would not know them. ${c.irreplaceable.remedy}`,
          );
        }
        drift.push(`missing ${c.type.kind}`);
        return;
      }
      const relation = this.trusted(mr, c, have, observed, main);
      if (relation === 'unmarked') return;
      if (recordable(this.kind, c) && have.metadata.uid) proven[refKey(c)] = have.metadata.uid;
      if (this.remark(mr, c, have)) drift.push(`${c.type.kind} ownership marks`);
      if (!c.irreplaceable) drift.push(...diffFields(withoutMetadata(c.build()), withoutMetadata(have)).map((p) => `${c.type.kind}${p}`));
    });
    return { wanted, found, drift, proven };
  }

  async create(mr: MR, signal: AbortSignal): Promise<ExternalCreation> {
    const made: Record<string, string> = {};
    let object: TargetObject;
    try {
      object = await this.apply(mr, true, made, signal);
    } catch (err) {
      // Companions made before the object failed are recorded with the failure (their record may name ones since lost).
      throw Object.keys(made).length ? new RecordedError(err, companionRecord(mr, made)) : err;
    }
    // Recorded with the create's outcome, in the same write: what a restore of this resource proves
    // its object by, and what proves the Service its endpoint names.
    const annotations = { ...(object.metadata.uid ? { [ANNOTATION_TARGET_UID]: object.metadata.uid } : {}), ...companionRecord(mr, made) };
    return Object.keys(annotations).length ? { annotations } : {};
  }

  async update(mr: MR, signal: AbortSignal): Promise<{ connectionDetails?: ConnectionDetails; annotations?: Record<string, string> }> {
    const made: Record<string, string> = {};
    try {
      await this.apply(mr, false, made, signal);
    } catch (err) {
      // What was made before a later step failed is recorded all the same, or its record would name the object it replaced.
      throw Object.keys(made).length ? new RecordedError(err, companionRecord(mr, made)) : err;
    }
    const annotations = companionRecord(mr, made);
    return Object.keys(annotations).length ? { annotations } : {};
  }

  /** Makes or repairs the object and its companions; `made` gets the uid of each recordable companion it made or changed. */
  private async apply(mr: MR, creating: boolean, made: Record<string, string>, signal: AbortSignal): Promise<TargetObject> {
    const record = (c: Companion, obj: TargetObject): void => {
      if (recordable(this.kind, c) && obj.metadata.uid) made[refKey(c)] = obj.metadata.uid;
    };
    const name = externalNameOf(mr.metadata);
    const owner = this.owner(mr);
    const type = this.kind.target;
    const ctx = this.ctx(mr);
    const desired = this.marks.mark(type, this.kind.desired(mr, name, ctx), owner);
    const vouchers = vouchersOf(mr);
    await this.opts.prerequisite?.(signal);
    const namespace = type.namespaced ? desired.metadata.namespace : undefined;
    if (namespace) await ensureNamespace(this.client, this.marks, namespace, owner, vouchers, signal);
    // With the work removing keys whose grace period ended, when there is such work.
    const retire = retireWork(this.kind, mr, name, ctx);
    const companions = [...(this.kind.companions?.(mr, name, ctx) ?? []), ...(retire ? [retire.object] : [])];
    if (creating && !vouchers.recordedUid && !vouchers.legacy && !retire) {
      const fresh = await createFresh(this.client, this.marks, { type, desired, companions, owner }, signal, record);
      if (fresh) return fresh;
      // Something was in the way (checked below), or the namespace was gone (made again here).
      if (namespace) await ensureNamespace(this.client, this.marks, namespace, owner, vouchers, signal);
    }
    // The object and every companion are checked before anything is written, so no store is ever
    // made that names someone else's Secret, and nothing unproven is ever written over.
    const observed = await this.client.get<TargetObject>(type, name, desired.metadata.namespace, signal);
    const relation = observed ? this.marks.relation(type, observed, owner, vouchers) : undefined;
    if (relation) this.refuseForeign(mr, relation, { type, name, namespace: desired.metadata.namespace });
    const found = await Promise.all(companions.map((c) => this.client.get<TargetObject>(c.type, c.name, c.namespace, signal)));
    const relations = companions.map((c, i) => (found[i] ? this.trusted(mr, c, found[i], observed, relation) : undefined));
    const access = { client: this.client, read: this.client, marks: this.marks };
    // Companions are proven by their signature: the recorded uid is the target object's, never theirs.
    const companionVouchers = { ...vouchers, recordedUid: undefined, restoring: relation === 'restored' };
    for (const [i, c] of companions.entries()) {
      const have = found[i];
      // A failed retire is made again (its Job's pod template cannot change): deleted now, made on the next pass.
      if (have && c === retire?.object && 'failed' in retire.outcome(have)) {
        await deleteIfOurs(access, c, owner, companionVouchers, signal);
      } else if (!have) {
        // A create, not an apply: should someone make it in between, this fails rather than adopts it.
        if (creating || !c.irreplaceable)
          record(c, await this.client.create<TargetObject>(c.type, this.marks.mark(c.type, c.build(), owner), signal));
      } else if (relations[i] !== 'unmarked' && !c.irreplaceable) {
        // Changed only while it is the object just checked (its uid is a precondition).
        const marked = this.marks.mark(c.type, c.build(), owner);
        record(c, await this.client.apply(c.type, { ...marked, metadata: { ...marked.metadata, uid: have.metadata.uid } }, signal));
      } else if (relations[i] !== 'unmarked' && this.remark(mr, c, have)) {
        // Irreplaceable: only the marks change (a restored resource's, a legacy one's, a new policy).
        const { labels, annotations } = this.marks.mark(c.type, have, owner).metadata;
        // Conditional on the copy just proven: a Secret swapped in between is never signed as ours.
        const { uid, resourceVersion } = have.metadata;
        await this.client.mergePatch(c.type, c.name, c.namespace, { metadata: { uid, resourceVersion, labels, annotations } }, signal);
      }
    }
    // Nothing is superseded before the first create.
    if (!creating)
      await deleteSuperseded(
        access,
        this.kind,
        owner,
        companionVouchers,
        { wanted: companions, namespaces: companions.map((c) => c.namespace) },
        signal,
      );
    // Made with a create, changed only while it is the object just checked (its uid is a precondition).
    if (!observed) return this.client.create(type, desired, signal);
    return this.client.apply(type, { ...desired, metadata: { ...desired.metadata, uid: observed.metadata.uid } }, signal);
  }

  async delete(mr: MR, signal: AbortSignal): Promise<ExternalDeletion> {
    const name = externalNameOf(mr.metadata);
    const owner = this.owner(mr);
    const ctx = this.ctx(mr);
    const namespace = this.kind.desired(mr, name, ctx).metadata.namespace;
    const vouchers = vouchersOf(mr);
    // The kind's work in the target first (revoking a user): until it is done, nothing is deleted.
    const teardown = this.kind.teardown?.(mr, name, ctx);
    const run = teardown && {
      target: { type: this.kind.target, name, namespace },
      owner,
      vouchers,
      teardown,
      trust: (c: Companion, have: TargetObject, observed: TargetObject, main: Relation) => this.trusted(mr, c, have, observed, main),
    };
    const torn = run ? await tearDown(this.teardownAccess(mr), run, signal) : 'done';
    if (torn === 'pending') return { gone: false, requested: false };
    if (torn === 'retain') {
      await retain(this.teardownAccess(mr), run!, [...(this.kind.companions?.(mr, name, ctx) ?? []), teardown!.object], signal);
      return { gone: true, requested: false };
    }
    const companions = [...(this.kind.companions?.(mr, name, ctx) ?? []), ...(teardown ? [teardown.object] : [])];
    const { gone, requested, keptNamespace } = await deleteOwned(
      { client: this.client, read: this.read, marks: this.marks },
      this.kind,
      { name, namespace, owner, vouchers, companions },
      signal,
    );
    // Other stores still living there is the usual case of a shared namespace, not news.
    if (keptNamespace && !keptNamespace.byStores) this.opts.recorder?.normal(mr, Reasons.KeptTargetNamespace, keptNamespace.why);
    return requested ? { gone } : { gone, requested };
  }
}

/** The replaced keys stay while something still holds them (a consumer without the new ones): only older ones go. */
function holdRetirement(plan: RotationPlan, held: string | undefined): RotationPlan {
  const previous = plan.next?.previous ?? plan.state.previous;
  if (!held || previous === undefined || !plan.view.due.includes(previous)) return plan;
  return { ...plan, view: { ...plan.view, due: plan.view.due.filter((g) => g !== previous) } };
}
