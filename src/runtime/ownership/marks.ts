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
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { timingSafeEqual } from 'node:crypto';
import { groupOf, type ResourceType } from '../../kit/kube/resources.ts';
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
      if (vouchers.recordedUid !== undefined && !vouchers.creating) return 'unproven';
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
    return { resource, namespace, name, key: `${namespace}/${name}`, uid };
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
