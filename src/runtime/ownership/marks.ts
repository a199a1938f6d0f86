// Ownership marks on every object we create in a target cluster: they say which control plane and
// which managed resource own it, and whether that resource wants it kept when it goes away.
//
// Labels and annotations are written in the target, so anyone who may write there can copy them.
// What they claim is therefore believed only with proof that no principal of a target can make:
// - a keyed signature (HMAC-SHA256) over the claim and the object's own identity, made with a key
//   that lives only in the control cluster (see key.ts): copied onto another object, or
//   edited (another owner, another reclaim policy), it no longer verifies;
// - for a resource's main object, its uid as the resource recorded it (ANNOTATION_TARGET_UID): a uid
//   is given by the target's API server, and the annotation lives on the managed resource, so a
//   resource restored from a backup of the control cluster names the very object it made.
//
// Two parts: the marks themselves (OwnershipMarks: what an object claims, and the proof of it), and
// one resource's ownership of its objects (ResourceOwnership: the rules observe, apply and delete
// judge its object and companions by). Each rule is a reading of the marks, so they share a file:
// a resource followed through a pass then stays here rather than going back and forth (past 400
// lines on purpose, for that).
import { keyOf } from '../../kit/controller/result.ts';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ReasonedError } from '../../kit/conditions.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { canonicalJson, objectDrift } from '../../kit/json.ts';
import { describeRef, groupOf, refKey, type ObjectRef, type ResourceType } from '../../kit/kube/resources.ts';
import { ANNOTATION_CREATE_PENDING, ANNOTATION_CREATE_SUCCEEDED, ANNOTATION_EXTERNAL_NAME, timestamp } from '../../kit/meta.ts';
import { byText } from '../../kit/order.ts';
import { policyOf } from '../managed/policies.ts';
import { reclaimPolicyOf, type ManagedResource } from '../managed/types.ts';
import { Reasons, UnprovenError, type Reason } from '../reasons.ts';
import type { OwnershipKey } from './key.ts';

export const LABEL_CONTROL_PLANE = 'rook.crossplane.io/control-plane';
export const LABEL_OWNER_UID = 'rook.crossplane.io/owner-uid';
export const ANNOTATION_OWNER = 'rook.crossplane.io/owner';
/** The owner's reclaim policy, so a store kept on purpose is never taken for a leak. */
export const ANNOTATION_RECLAIM_POLICY = 'rook.crossplane.io/reclaim-policy';
/** The signature over the marks and the object's identity. */
export const ANNOTATION_OWNER_PROOF = 'rook.crossplane.io/owner-proof';
/** On a managed resource: the uid of its object in the target, recorded when it was made or proven. */
export const ANNOTATION_TARGET_UID = 'rook.crossplane.io/target-uid';
/**
 * On a managed resource: the uids of its companions (all but Jobs), as a JSON object keyed by each
 * companion's identity, recorded when provider-rook made or first proved them: what proves them
 * when their marks are stripped, and what a copy put in their place can never show.
 */
export const ANNOTATION_COMPANION_UIDS = 'rook.crossplane.io/companion-uids';

/**
 * When provider-rook made the object (unix seconds), signed for its identity: the one thing a signed
 * copy cannot carry over is its creationTimestamp, which only the API server sets. A copy made later
 * from the same manifest (a restore from a backup, a GitOps re-apply) verifies in every mark but this.
 */
export const ANNOTATION_MADE_AT = 'rook.crossplane.io/made-at';
/** How far apart a target's clock and ours may be, by default (NTP keeps them far closer). */
export const CLOCK_SKEW_MS = 5 * 60_000;

const PROOF_VERSION = 'v1';

export interface Owner {
  /** e.g. objectstores.minio.rook.crossplane.io */
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  reclaimPolicy?: string;
}

export interface OwnerKey {
  resource: string;
  namespace: string;
  name: string;
  /** "namespace/name" */
  key: string;
  uid: string;
}

export interface Marked {
  metadata: { name: string; namespace?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

/**
 * How a target object relates to a managed resource:
 * - ours: marked for this very resource (same uid), and proven;
 * - restored: marked for a resource of the same kind, namespace and name but another uid, and the
 *   resource recorded this object's uid (a restore from a backup of the control cluster);
 * - unproven: marked for this resource's name, but nothing proves it (forged, copied, or made for
 *   an earlier resource of the same name that this one never was): left as it is;
 * - another: marked for another resource, or by another control plane;
 * - unmarked: nobody we know made it; adopted only on an explicit import.
 */
export type Relation = 'ours' | 'restored' | 'unproven' | 'another' | 'unmarked';

/** What vouches for an object besides its signature. */
export interface Vouchers {
  /** The uid the resource recorded for its main object (ANNOTATION_TARGET_UID). */
  recordedUid?: string;
  /** A companion of a main object proven 'restored': its signature for the earlier uid suffices. */
  restoring?: boolean;
  /** The resource predates signed marks: unsigned marks for its own uid are believed once (upgrade). */
  legacy?: boolean;
  /** A create of the resource's object is under way (or was cut short): a signed object may replace the recorded one. */
  creating?: boolean;
  /**
   * When provider-rook made the companion its record names (seconds, its signed made-at), where the
   * record says: one it made again later (someone deleted that one) whose new uid went unrecorded
   * (the create's answer lost, the process ended) replaces it. Its marks are signed, its signed time
   * of making is later than the recorded one's and is its creation's: only provider-rook made it,
   * then. A copy of the recorded one (its time) is not, nor a copy made later of any, nor one whose
   * time a drift repair has since dropped (it applies the build, without it).
   */
  recordedMadeAt?: number;
}

export class OwnershipMarks {
  readonly controlPlaneId: string;
  readonly #key: OwnershipKey;

  constructor(controlPlaneId: string, key: OwnershipKey) {
    this.controlPlaneId = controlPlaneId;
    this.#key = key;
  }

  /** A credential for `purpose`, derived from the ownership key (see OwnershipKey.derive). */
  credential(purpose: string, length: number): string {
    return this.#key.derive(purpose, length);
  }

  /** Selects everything this control plane claims in a target (claims, not proof). */
  get selector(): string {
    return `${LABEL_CONTROL_PLANE}=${this.controlPlaneId}`;
  }

  /** Selects what claims to belong to this resource (by uid). */
  selectorFor(owner: Owner): string {
    return `${this.selector},${LABEL_OWNER_UID}=${owner.uid}`;
  }

  /** The marks for `obj` (of `type`, with its name and namespace set) owned by `owner`. */
  mark<T extends Marked>(
    type: ResourceType,
    obj: T,
    owner: Owner,
  ): T & { metadata: { labels: Record<string, string>; annotations: Record<string, string> } } {
    const annotations: Record<string, string> = {
      ...obj.metadata.annotations,
      [ANNOTATION_OWNER]: `${owner.resource}/${owner.namespace}/${owner.name}`,
      ...(owner.reclaimPolicy ? { [ANNOTATION_RECLAIM_POLICY]: owner.reclaimPolicy } : {}),
    };
    const labels = { ...obj.metadata.labels, [LABEL_CONTROL_PLANE]: this.controlPlaneId, [LABEL_OWNER_UID]: owner.uid };
    const marked = { ...obj, metadata: { ...obj.metadata, labels, annotations } };
    annotations[ANNOTATION_OWNER_PROOF] = this.proofOf(type, marked);
    return marked;
  }

  /** The signature of obj's marks and identity, as its annotation holds it. */
  private proofOf(type: ResourceType, obj: Marked): string {
    const labels = obj.metadata.labels ?? {};
    const annotations = obj.metadata.annotations ?? {};
    // A JSON array: no field can run into the next one.
    const payload = JSON.stringify([
      PROOF_VERSION,
      labels[LABEL_CONTROL_PLANE] ?? '',
      labels[LABEL_OWNER_UID] ?? '',
      annotations[ANNOTATION_OWNER] ?? '',
      annotations[ANNOTATION_RECLAIM_POLICY] ?? '',
      groupOf(type),
      type.kind,
      obj.metadata.namespace ?? '',
      obj.metadata.name,
    ]);
    return `${PROOF_VERSION}.${this.#key.sign(payload).toString('base64url')}`;
  }

  /**
   * `obj` (marked) as it is created: with the time it is made, signed for its control plane, type,
   * namespace and name, not for its owner's uid, so the re-marks of a restored resource keep it.
   */
  stamped<M extends Marked>(type: ResourceType, obj: M, now = Date.now()): M {
    const seconds = Math.floor(now / 1000);
    const stamp = `${seconds}.${this.madeAtProof(type, obj, seconds)}`;
    return { ...obj, metadata: { ...obj.metadata, annotations: { ...obj.metadata.annotations, [ANNOTATION_MADE_AT]: stamp } } };
  }

  private madeAtProof(type: ResourceType, obj: ReadonlyDeep<Marked>, seconds: number): string {
    const payload = JSON.stringify([
      PROOF_VERSION,
      'made-at',
      obj.metadata.labels?.[LABEL_CONTROL_PLANE] ?? '',
      groupOf(type),
      type.kind,
      obj.metadata.namespace ?? '',
      obj.metadata.name,
      String(seconds),
    ]);
    return this.#key.sign(payload).toString('base64url');
  }

  /**
   * Why obj, though its marks verify, is not the object provider-rook made: its signed time of
   * making is further than `toleranceMs` (clock skew, a slow create) from its creationTimestamp, or
   * does not verify. Undefined when it is the one made then, or carries no time (made before times
   * were signed, or its create and its stamp were both cut off): then its signature alone speaks.
   */
  remade(
    type: ResourceType,
    obj: ReadonlyDeep<Marked & { metadata: { creationTimestamp?: string } }>,
    toleranceMs: number,
  ): string | undefined {
    const stamp = obj.metadata.annotations?.[ANNOTATION_MADE_AT];
    if (stamp === undefined) return undefined;
    const [text = '', proof = ''] = stamp.split('.', 2);
    const seconds = /^\d{1,12}$/.test(text) ? Number(text) : NaN;
    const want = Buffer.from(Number.isNaN(seconds) ? '' : this.madeAtProof(type, obj, seconds));
    // Compared as bytes: a proof of as many characters may hold more bytes (timingSafeEqual throws on unequal lengths).
    const have = Buffer.from(proof);
    if (!want.length || want.length !== have.length || !timingSafeEqual(want, have))
      return `its ${ANNOTATION_MADE_AT} annotation does not verify, so nothing proves it is the object provider-rook made; delete it by hand if it is yours`;
    const created = Date.parse(obj.metadata.creationTimestamp ?? '');
    // The API server's timestamps have whole seconds, as the stamp does: one more second either way.
    if (Number.isNaN(created) || Math.abs(created - seconds * 1000) <= toleranceMs + 1000) return undefined;
    return (
      `it was created at ${new Date(created).toISOString()}, but provider-rook made it at ${new Date(seconds * 1000).toISOString()}: ` +
      'it is a copy (restored from a backup, or re-created from its manifest), not the object provider-rook made; delete it by hand if it is not wanted'
    );
  }

  /** obj carries a signed time of making later than `after` (seconds), and was created then (give or take the clocks' skew). */
  private madeLater(type: ResourceType, obj: ReadonlyDeep<Marked>, after: number): boolean {
    const seconds = madeAtSeconds(obj);
    return (
      seconds !== undefined &&
      seconds > after &&
      this.remade(type, obj as ReadonlyDeep<Marked & { metadata: { creationTimestamp?: string } }>, CLOCK_SKEW_MS) === undefined
    );
  }

  /** The marks on obj were made by this control plane for obj itself (not copied, not edited). */
  signed(type: ResourceType, obj: ReadonlyDeep<Marked>): boolean {
    const proof = obj.metadata.annotations?.[ANNOTATION_OWNER_PROOF];
    if (!proof) return false;
    const want = Buffer.from(this.proofOf(type, obj));
    const have = Buffer.from(proof);
    return have.length === want.length && timingSafeEqual(have, want);
  }

  /** Marks without a proof at all: written before marks were signed (or forged). */
  unsigned(obj: ReadonlyDeep<Marked>): boolean {
    return obj.metadata.annotations?.[ANNOTATION_OWNER_PROOF] === undefined;
  }

  relation(type: ResourceType, obj: ReadonlyDeep<Marked>, owner: Owner, vouchers: Vouchers = {}): Relation {
    const labels = obj.metadata.labels ?? {};
    if (labels[LABEL_CONTROL_PLANE] === undefined && labels[LABEL_OWNER_UID] === undefined) return 'unmarked';
    const key = this.claimedOwner(obj);
    if (!key || key.resource !== owner.resource || key.namespace !== owner.namespace || key.name !== owner.name) return 'another';
    const recorded = vouchers.recordedUid !== undefined && vouchers.recordedUid === obj.metadata.uid;
    if (key.uid === owner.uid) {
      if (recorded) return 'ours';
      // The resource names another object as its own: this one replaced it. Only a create of ours
      // may have done that (a signature could be replayed onto a copy made after ours was deleted).
      if (vouchers.recordedUid !== undefined && !vouchers.creating)
        return vouchers.recordedMadeAt !== undefined && this.signed(type, obj) && this.madeLater(type, obj, vouchers.recordedMadeAt)
          ? 'ours'
          : 'unproven';
      if (this.signed(type, obj) || (vouchers.legacy && this.unsigned(obj))) return 'ours';
      return 'unproven';
    }
    if (recorded || (vouchers.restoring && this.signed(type, obj))) return 'restored';
    return 'unproven';
  }

  /** The owner the marks claim, if they are this control plane's (not proof: see provenOwner). */
  claimedOwner(obj: ReadonlyDeep<Marked>): OwnerKey | undefined {
    const labels = obj.metadata.labels ?? {};
    if (labels[LABEL_CONTROL_PLANE] !== this.controlPlaneId) return undefined;
    const owner = obj.metadata.annotations?.[ANNOTATION_OWNER];
    const uid = labels[LABEL_OWNER_UID];
    const parts = owner?.split('/');
    if (!parts || parts.length !== 3 || !uid) return undefined;
    const [resource, namespace, name] = parts as [string, string, string];
    return { resource, namespace, name, key: keyOf({ namespace, name }), uid };
  }

  /** The owning resource, when this control plane's signature proves the marks. */
  provenOwner(type: ResourceType, obj: ReadonlyDeep<Marked>): OwnerKey | undefined {
    const owner = this.claimedOwner(obj);
    return owner && this.signed(type, obj) ? owner : undefined;
  }

  /** The owner asked for the object to stay when the owner goes away (Retain or Orphan). */
  keptOnRelease(obj: Marked): boolean {
    const policy = obj.metadata.annotations?.[ANNOTATION_RECLAIM_POLICY];
    return policy !== undefined && policy !== 'Delete';
  }
}

// One managed resource's ownership of its objects in a target: who it is, what vouches for its
// main object and its companions, and the rules that observe, apply and delete share before they
// use or write any of them. Companions are proven beyond the marks on them (which anyone who may
// write in a target namespace can strip or copy) by the uids recorded when provider-rook made them.

/** An object a resource keeps beside its main one (native/kind.ts's Companion), and what ownership judges it by. */
export interface OwnedCompanion<T extends Marked> extends ObjectRef {
  /** What it is for, in messages (e.g. "access-keys Secret"). */
  purpose: string;
  /** The object we want. Kept in this shape, unless irreplaceable. */
  build(): T;
  /**
   * For what cannot be remade once the target object uses it (keys a running server holds): made
   * only together with the target object and never again. Losing it later is reported, with this
   * reason and remedy, instead of being papered over with a new one.
   */
  irreplaceable?: { reason: Reason; remedy: string };
  /**
   * The connection keys that lead to it (an endpoint Service). Companions are recognised by the uid
   * provider-rook recorded when it made them, not by marks anyone who may write there can strip; while
   * this one cannot be proven, even unmarked, the resource is not Ready and these keys are withheld.
   */
  publishedAs?: string[];
  /**
   * A user, its keys or its policy: it goes with the resource even where the teardown keeps the store
   * and everything in it (retainWhenKept). The data stays; no one's access to it does.
   */
  grantsAccess?: boolean;
}

/** What ownership needs to know of a resource's kind: its name, its work, and what its object names itself. */
export interface OwningKind<T extends Marked> {
  /** "plural.group", recorded in the marks. */
  resource: string;
  /** Work the kind supersedes (Jobs): see isWork. */
  superseded?: { type: ResourceType };
  /** Objects the target object itself names: on import, these may be used though we did not make them. */
  references?(observed: T): ObjectRef[];
}

/**
 * A companion there, as a resource judges it: how it relates, where it differs from what would be
 * written, and (unless only its marks are ours to keep) what that is.
 */
export interface Verdict<T extends Marked> {
  relation: Relation;
  /** Paths that differ ("" for the marks alone); empty when up to date, or not ours to write. */
  drift: string[];
  /** The companion as built, marked ours, when all of it is ours to write. */
  built?: T;
}

/** On a companion: the digest of what its kind built, so that a build that drops a field is told from the copy there. */
export const ANNOTATION_BUILT_DIGEST = 'rook.crossplane.io/built-digest';

export const builtDigest = (built: unknown): string => createHash('sha256').update(canonicalJson(built)).digest('hex').slice(0, 16);

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

/** What vouches for a resource's objects besides their signatures. */
function vouchersOf(mr: ManagedResource): Vouchers {
  const annotations = mr.metadata.annotations ?? {};
  const recordedUid = annotations[ANNOTATION_TARGET_UID] || undefined;
  // Made or imported before marks were signed, and not proven since: its unsigned marks are believed once.
  const legacy = !recordedUid && (Boolean(annotations[ANNOTATION_CREATE_SUCCEEDED]) || importRequested(mr));
  // Pending newer than succeeded (second precision): a create began after the last one recorded its object.
  const pending = Date.parse(annotations[ANNOTATION_CREATE_PENDING] ?? '');
  const creating = pending > (Date.parse(annotations[ANNOTATION_CREATE_SUCCEEDED] ?? '') || 0);
  return { recordedUid, legacy, creating };
}

/** The companion uids a resource recorded (ANNOTATION_COMPANION_UIDS); an unreadable record records nothing. */
/**
 * A companion record's entry for obj: its uid, and when provider-rook made it (its made-at's
 * seconds, as its create's answer has it) after an "@", where it says: "uid" or "uid@seconds".
 */
export function companionEntry(obj: ReadonlyDeep<Marked & { metadata: { uid?: string } }>): string {
  const seconds = madeAtSeconds(obj);
  return `${obj.metadata.uid ?? ''}${seconds === undefined ? '' : `@${seconds}`}`;
}

/** The seconds of obj's made-at, unverified (undefined when it has none that reads as one). */
function madeAtSeconds(obj: ReadonlyDeep<Marked>): number | undefined {
  const text = obj.metadata.annotations?.[ANNOTATION_MADE_AT]?.split('.', 1)[0] ?? '';
  return /^\d{1,12}$/.test(text) ? Number(text) : undefined;
}

/** The uid a companion record's entry names ("uid" or "uid@seconds"). */
export const entryUid = (entry: string): string => entryOf(entry).uid;

/** An entry's uid and time of making ("uid" or "uid@seconds"). */
function entryOf(entry: string): { uid: string; madeAt?: number } {
  const [uid = '', seconds = ''] = entry.split('@', 2);
  return /^\d{1,12}$/.test(seconds) ? { uid, madeAt: Number(seconds) } : { uid };
}

function recordedCompanions(mr: ManagedResource): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(mr.metadata.annotations?.[ANNOTATION_COMPANION_UIDS] ?? '{}');
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    // Only text entries: anything else written by hand records nothing.
    return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/** A companion that cannot be proven: the resource is not Ready, and its Secret withholds the keys that lead there. */
function unproven(c: OwnedCompanion<Marked>, why: string): UnprovenError {
  return new UnprovenError(
    c.publishedAs ? Reasons.EndpointNotProven : Reasons.CompanionNotOwned,
    `the ${c.purpose} ${describeRef(c)} in the target cluster ${why}, so ${c.publishedAs ? 'its address is not published and ' : ''}nothing is written to it. ` +
      'If it is not in use, delete it: provider-rook makes its own again',
    c.publishedAs ?? [],
  );
}

export class ResourceOwnership<T extends Marked> {
  readonly marks: OwnershipMarks;
  readonly owner: Owner;
  /** What vouches for the main object (companions are proven by their signatures: see companionVouchers). */
  readonly vouchers: Vouchers;
  /** The user asked to adopt an existing object (importRequested). */
  readonly imported: boolean;
  readonly #kind: OwningKind<T>;
  readonly #mr: ManagedResource;

  constructor(marks: OwnershipMarks, kind: OwningKind<T>, mr: ManagedResource) {
    this.marks = marks;
    this.#kind = kind;
    this.#mr = mr;
    this.owner = ownerOf(kind.resource, mr);
    this.vouchers = vouchersOf(mr);
    this.imported = importRequested(mr);
  }

  /** How an object of `type` relates to this resource, as its main object unless other vouchers are given. */
  relationOf(type: ResourceType, obj: ReadonlyDeep<Marked>, vouchers: Vouchers = this.vouchers): Relation {
    return this.marks.relation(type, obj, this.owner, vouchers);
  }

  /** `obj` marked as this resource's. */
  marked<O extends Marked>(
    type: ResourceType,
    obj: O,
  ): O & { metadata: { labels: Record<string, string>; annotations: Record<string, string> } } {
    return this.marks.mark(type, obj, this.owner);
  }

  /** What vouches for companions: their signatures; the recorded uid is the target object's, never theirs. */
  companionVouchers(main: Relation | undefined): Vouchers {
    return { ...this.vouchers, recordedUid: undefined, restoring: main === 'restored' };
  }

  /**
   * What vouches for companion `c` when it is deleted or kept: its recorded uid too, so that a signed
   * copy put in its place (re-created from its manifest) is never taken for it, as trusted() judges.
   */
  companionVouchersFor(c: OwnedCompanion<T>, main: Relation | undefined): Vouchers {
    const entry = this.recordable(c) ? recordedCompanions(this.#mr)[refKey(c)] : undefined;
    if (!entry) return this.companionVouchers(main);
    const { uid, madeAt } = entryOf(entry);
    // A create under way vouches for the object it makes, not for a companion in place of the recorded one.
    const recorded = { recordedUid: uid, creating: false, ...(madeAt === undefined ? {} : { recordedMadeAt: madeAt }) };
    return { ...this.companionVouchers(main), ...recorded };
  }

  /**
   * Work the kind supersedes (Jobs): its spec cannot change once made, and its name digests what it
   * does, so a copy that differs from today's build (made by an earlier release) is neither drift nor
   * written over: new work gets a new name.
   */
  isWork(c: ObjectRef): boolean {
    const work = this.#kind.superseded?.type;
    return Boolean(work && c.type.apiVersion === work.apiVersion && c.type.kind === work.kind);
  }

  /**
   * Companions are recorded by uid when made or first proven, but for work (their uids are not worth
   * a write each: made anew for new keys or policies) and the irreplaceable ones (a store's root
   * keys): putting back the very Secret that was lost is their remedy, and a copy of theirs leads
   * nowhere but to the store it names.
   */
  recordable(c: OwnedCompanion<T>): boolean {
    return !c.irreplaceable && !this.isWork(c);
  }

  /**
   * The annotation that records the main object's uid, once it is proven (ours or restored) and
   * that changes the record: a restore of the resource from a backup then proves it again. Not while
   * its marks are unsigned (an upgrade): the record ends the legacy belief, which its companions
   * and namespace still need until the update signs them. A create whose own record was lost
   * (a crash, a lost answer) ends with it: while one is under way, any signed copy passes for the
   * object it made, so a copy made after ours was deleted must not pass for good.
   */
  objectRecord(type: ResourceType, observed: T, relation: Relation, now: number): Record<string, string> {
    const uid = observed.metadata.uid;
    const proven = (relation === 'ours' || relation === 'restored') && this.marks.signed(type, observed);
    if (!proven || !uid || this.vouchers.recordedUid === uid) return {};
    return { [ANNOTATION_TARGET_UID]: uid, ...(this.vouchers.creating ? { [ANNOTATION_CREATE_SUCCEEDED]: timestamp(new Date(now)) } : {}) };
  }

  /**
   * The annotation that records `made` (companion identity -> uid) beside what the resource recorded,
   * if that changes it. An entry is never dropped before its object is made again (a copy someone
   * puts in its place meanwhile, signature and all, would be taken for ours), but for companions
   * `retired`: the keys of a generation whose grace period ended, gone from the target. Rotation
   * never names them again, and a record that kept them would grow with every rotation until the
   * resource could no longer be written (annotations hold 256 KiB in all). Only a platform team that
   * removes the rotation record (ANNOTATION_CREDENTIALS, to go back to the first keys) brings their
   * names back: those are then proven by their signature alone, as a companion made for the first time.
   */
  companionRecord(made: Record<string, string>, retired: ObjectRef[] = []): Record<string, string> {
    const before = recordedCompanions(this.#mr);
    const drop = new Set(retired.map(refKey).filter((k) => k in before && !(k in made)));
    // An entry for the same uid stays as it is: what it says of its making is what its create's answer said.
    const changed = Object.entries(made).filter(([k, v]) => !before[k] || entryOf(before[k]).uid !== entryOf(v).uid);
    if (!drop.size && !changed.length) return {};
    const after = Object.entries({ ...before, ...Object.fromEntries(changed) })
      .filter(([k]) => !drop.has(k))
      .sort(([a], [b]) => byText(a, b));
    return { [ANNOTATION_COMPANION_UIDS]: JSON.stringify(Object.fromEntries(after)) };
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
  trusted(c: OwnedCompanion<T>, have: T, observed: T | undefined, main: Relation | undefined): Relation {
    // A companion whose uid was recorded is that very object: its marks may have been stripped, and a copy's never prove it.
    const entry = this.recordable(c) && recordedCompanions(this.#mr)[refKey(c)];
    if (entry) {
      const { uid: recorded, madeAt } = entryOf(entry);
      if (have.metadata.uid === recorded) return 'ours';
      if (madeAt !== undefined && this.relationOf(c.type, have, { recordedUid: recorded, recordedMadeAt: madeAt }) === 'ours')
        return 'ours';
      throw unproven(c, 'is not the object provider-rook made for this resource (it was replaced)');
    }
    const relation = this.relationOf(c.type, have, this.companionVouchers(main));
    if (relation === 'ours' || relation === 'restored') return relation;
    if (
      relation === 'unmarked' &&
      observed &&
      this.imported &&
      // Only in the adopted object's own namespace: whoever made it could name any Secret elsewhere.
      c.namespace === observed.metadata.namespace &&
      (this.#kind.references?.(observed) ?? []).some((r) => refKey(r) === refKey(c))
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
  built(c: OwnedCompanion<T>): T {
    const fresh = c.build();
    const annotations = { ...fresh.metadata.annotations, [ANNOTATION_BUILT_DIGEST]: builtDigest(fresh) };
    return this.marked(c.type, { ...fresh, metadata: { ...fresh.metadata, annotations } });
  }

  /** The companion as built, stamped with the time it is made: what a create sends. */
  made(c: OwnedCompanion<T>): T {
    return this.marks.stamped(c.type, this.built(c));
  }

  /**
   * How a companion there stands (trusted), and what writing it would change: all of it, as apply
   * writes it (marks and the build's digest included, so a field a later build dropped is drift too);
   * or, when it is irreplaceable or work that cannot change, only its marks.
   */
  verdict(c: OwnedCompanion<T>, have: T, observed: T | undefined, main: Relation | undefined): Verdict<T> {
    const relation = this.trusted(c, have, observed, main);
    if (relation === 'unmarked') return { relation, drift: [] };
    if (c.irreplaceable || this.isWork(c)) return { relation, drift: this.remarked(c, have) ? [' ownership marks'] : [] };
    const built = this.built(c);
    return { relation, drift: objectDrift(built, have), built };
  }

  /** Our marks on a companion differ from what this resource signs now (restored, legacy, new reclaim policy). */
  private remarked(c: OwnedCompanion<T>, have: T): boolean {
    const want = this.marked(c.type, { metadata: { name: c.name, namespace: c.namespace } });
    return want.metadata.annotations[ANNOTATION_OWNER_PROOF] !== have.metadata.annotations?.[ANNOTATION_OWNER_PROOF];
  }
}
