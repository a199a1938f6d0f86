// One pass of the generic ExternalClient (external.ts) over one managed resource: who the resource
// is in the target (its external name, its owner, what vouches for its objects), where the pass
// reads and writes, and the trust rules that observe, apply and delete share. It is made once per
// call, so each phase takes this one object rather than a bag of callbacks and a row of parameters.
import { createHash } from 'node:crypto';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { canonicalJson, objectDrift } from '../../kit/json.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { KubeClient } from '../../kit/kube/client.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import { type ResourceType, describeRef, refKey, type ObjectRef } from '../../kit/kube/resources.ts';
import { ANNOTATION_CREATE_PENDING, ANNOTATION_CREATE_SUCCEEDED, ANNOTATION_EXTERNAL_NAME, externalNameOf } from '../../kit/meta.ts';
import { policyOf } from '../managed/policies.ts';
import { reclaimPolicyOf, type ManagedResource } from '../managed/types.ts';
import {
  ANNOTATION_COMPANION_UIDS,
  ANNOTATION_OWNER_PROOF,
  ANNOTATION_TARGET_UID,
  type OwnershipMarks,
  type Owner,
  type Relation,
  type Vouchers,
} from '../ownership/marks.ts';
import { Reasons, UnprovenError, type Reason } from '../reasons.ts';
import { type Companion, type KindContext, type NativeKind, type ObjectReader, type TargetObject } from './kind.ts';
import { planFor } from './rotation.ts';
import type { RotationPlan } from './rotation.ts';
import { byText } from '../../kit/order.ts';

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
  managed?: { get(type: ResourceType, key: ObjectKey): ReadonlyDeep<ManagedResource> | undefined };
  /**
   * Why the keys a rotation replaced must keep working past their grace period (a consumer of the
   * claim does not hold the new ones yet), or undefined: while it says why, they are not removed.
   */
  retirementHold?: (mr: ManagedResource) => string | undefined;
}

/** Where a pass reads and writes in the target: `read` may be a cache (a first look only), `client` is live. */
export interface TargetAccess {
  client: KubeClient;
  read: ObjectReader;
  marks: OwnershipMarks;
  signal: AbortSignal;
}

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

/** The user asked to adopt an existing object by naming it before we ever tried to create one. */
export function importRequested(mr: ManagedResource): boolean {
  const annotations = mr.metadata.annotations ?? {};
  return Boolean(annotations[ANNOTATION_EXTERNAL_NAME]) && !annotations[ANNOTATION_CREATE_PENDING];
}

/** What vouches for a resource's objects besides their signatures (see ownership/marks.ts). */
export function vouchersOf(mr: ManagedResource): Vouchers {
  const annotations = mr.metadata.annotations ?? {};
  const recordedUid = annotations[ANNOTATION_TARGET_UID] || undefined;
  // Made or imported before marks were signed, and not proven since: its unsigned marks are believed once.
  const legacy = !recordedUid && (Boolean(annotations[ANNOTATION_CREATE_SUCCEEDED]) || importRequested(mr));
  // Pending newer than succeeded (second precision): a create began after the last one recorded its object.
  const pending = Date.parse(annotations[ANNOTATION_CREATE_PENDING] ?? '');
  const creating = pending > (Date.parse(annotations[ANNOTATION_CREATE_SUCCEEDED] ?? '') || 0);
  return { recordedUid, legacy, creating };
}

// What proves a resource's companions beyond the marks on them, which anyone who may write in a
// target namespace can strip or copy: the uids recorded when provider-rook made them.

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
  const after = Object.entries({ ...before, ...made }).sort(([a], [b]) => byText(a, b));
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
  return !c.irreplaceable && !isWork(kind, c);
}

/**
 * Work the kind supersedes (Jobs): its spec cannot change once made, and its name digests what it
 * does, so a copy that differs from today's build (made by an earlier release) is neither drift nor
 * written over: new work gets a new name.
 */
export function isWork(kind: Pick<NativeKind<ManagedResource>, 'superseded'>, c: Companion): boolean {
  const work = kind.superseded?.type;
  return Boolean(work && c.type.apiVersion === work.apiVersion && c.type.kind === work.kind);
}

/** On a companion: the digest of what its kind built, so that a build that drops a field is told from the copy there. */
export const ANNOTATION_BUILT_DIGEST = 'rook.crossplane.io/built-digest';

export const builtDigest = (built: TargetObject): string => createHash('sha256').update(canonicalJson(built)).digest('hex').slice(0, 16);

/**
 * A companion there, as this pass judges it: how it relates to the resource, where it differs from
 * what the pass would write, and (unless only its marks are ours to keep) what that is.
 */
export interface Verdict {
  relation: Relation;
  /** Paths that differ ("" for the marks alone); empty when up to date, or not ours to write. */
  drift: string[];
  /** The companion as built, marked ours, when all of it is ours to write. */
  built?: TargetObject;
}

export class NativePass<MR extends ManagedResource> implements TargetAccess {
  readonly kind: NativeKind<MR>;
  readonly client: KubeClient;
  readonly read: ObjectReader;
  readonly marks: OwnershipMarks;
  readonly opts: NativeExternalOptions;
  readonly mr: MR;
  readonly signal: AbortSignal;
  /** The external name (observe checks it before it reaches a request). */
  readonly name: string;
  readonly owner: Owner;
  /** What vouches for the target object (its companions are proven by their signatures: see companionVouchers). */
  readonly vouchers: Vouchers;
  /** The user asked to adopt an existing object (importRequested). */
  readonly imported: boolean;
  readonly now: () => number;

  constructor(
    target: { kind: NativeKind<MR>; client: KubeClient; marks: OwnershipMarks; opts: NativeExternalOptions },
    mr: MR,
    signal: AbortSignal,
  ) {
    ({ kind: this.kind, client: this.client, marks: this.marks, opts: this.opts } = target);
    this.read = this.opts.reader ?? this.client;
    this.now = this.opts.now ?? Date.now;
    this.mr = mr;
    this.signal = signal;
    this.name = externalNameOf(mr.metadata);
    this.owner = ownerOf(this.kind.resource, mr);
    this.vouchers = vouchersOf(mr);
    this.imported = importRequested(mr);
  }

  /**
   * The kind's context from the resource's recorded keys only: a rotation is decided (and recorded)
   * by observe, so a write never uses keys the record does not name.
   */
  recorded(): KindContext {
    return kindContext(this.marks, planFor(this.kind, this.mr, this.now(), false));
  }

  /** The target object's reference: its namespace is the kind's to say. */
  target(ctx: KindContext): ObjectRef {
    return { type: this.kind.target, name: this.name, namespace: this.kind.desired(this.mr, this.name, ctx).metadata.namespace };
  }

  /** The companions the kind wants for this resource with these keys. */
  companions(ctx: KindContext): Companion[] {
    return this.kind.companions?.(this.mr, this.name, ctx) ?? [];
  }

  /** The same access, reading live: for a write that is not conditional on the copy it checked. */
  live(): TargetAccess {
    return { client: this.client, read: this.client, marks: this.marks, signal: this.signal };
  }

  /** What vouches for companions: their signatures; the recorded uid is the target object's, never theirs. */
  companionVouchers(main: Relation | undefined): Vouchers {
    return { ...this.vouchers, recordedUid: undefined, restoring: main === 'restored' };
  }

  /** Throws why this resource may not act on the object at `ref`, unless it may. */
  refuseForeign(relation: Relation, ref: ObjectRef): void {
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
    if (relation === 'unmarked' && !this.imported) {
      throw new ReasonedError(
        Reasons.ExternalResourceConflict,
        `${describeRef(ref)} already exists in the target cluster and is not owned by this resource; it was left untouched. ` +
          `A platform team can adopt it by creating a managed resource with the ${ANNOTATION_EXTERNAL_NAME} annotation; otherwise choose another name`,
      );
    }
  }

  /**
   * Companions are used only when we made them for this resource, or (on import) when the adopted
   * object names them itself: a resource can never point us at someone else's Secret. An import
   * cannot change what the object names (fixedAtCreation), so this holds after adoption too.
   * `main` is how the target object itself relates: a restored one brings its signed companions.
   */
  trusted(c: Companion, have: TargetObject, observed: TargetObject | undefined, main: Relation | undefined): Relation {
    // A companion whose uid was recorded is that very object: its marks may have been stripped, and a copy's never prove it.
    const recorded = recordable(this.kind, c) && recordedCompanions(this.mr)[refKey(c)];
    if (recorded) {
      if (have.metadata.uid === recorded) return 'ours';
      throw unproven(c, 'is not the object provider-rook made for this resource (it was replaced)');
    }
    const relation = this.marks.relation(c.type, have, this.owner, this.companionVouchers(main));
    if (relation === 'ours' || relation === 'restored') return relation;
    if (
      relation === 'unmarked' &&
      observed &&
      this.imported &&
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

  /**
   * The companion as its kind builds it, marked ours, with the digest of what was built: a copy that
   * holds every field built may still hold one a later build dropped, which only an apply removes.
   */
  built(c: Companion): TargetObject {
    const fresh = c.build();
    const annotations = { ...fresh.metadata.annotations, [ANNOTATION_BUILT_DIGEST]: builtDigest(fresh) };
    return this.marks.mark(c.type, { ...fresh, metadata: { ...fresh.metadata, annotations } }, this.owner);
  }

  /**
   * How a companion there stands (trusted), and what writing it would change: all of it, as apply
   * writes it (marks and the build's digest included, so a field a later build dropped is drift too);
   * or, when it is irreplaceable or work that cannot change, only its marks.
   */
  judge(c: Companion, have: TargetObject, observed: TargetObject | undefined, main: Relation | undefined): Verdict {
    const relation = this.trusted(c, have, observed, main);
    if (relation === 'unmarked') return { relation, drift: [] };
    if (c.irreplaceable || isWork(this.kind, c)) return { relation, drift: this.remark(c, have) ? [' ownership marks'] : [] };
    const built = this.built(c);
    return { relation, drift: objectDrift(built, have), built };
  }

  /** Our marks on a companion differ from what this resource signs now (restored, legacy, new reclaim policy). */
  private remark(c: Companion, have: TargetObject): boolean {
    const want = this.marks.mark(c.type, { metadata: { name: c.name, namespace: c.namespace } }, this.owner);
    return want.metadata.annotations[ANNOTATION_OWNER_PROOF] !== have.metadata.annotations?.[ANNOTATION_OWNER_PROOF];
  }

  /** A Warning Event on the resource. */
  warn(reason: Reason, message: string): void {
    this.opts.recorder?.warning(this.mr, reason, message);
  }
}
