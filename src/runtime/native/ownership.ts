// Ownership marks on every object we create in a target cluster: they say which control plane and
// which managed resource own it, and whether that resource wants it kept when it goes away. We
// change nothing without them (except on an explicit import), and they are how we find our leaks.

export const LABEL_CONTROL_PLANE = 'rook.crossplane.io/control-plane';
export const LABEL_OWNER_UID = 'rook.crossplane.io/owner-uid';
export const ANNOTATION_OWNER = 'rook.crossplane.io/owner';
/** The owner's reclaim policy, so a store kept on purpose is never taken for a leak. */
export const ANNOTATION_RECLAIM_POLICY = 'rook.crossplane.io/reclaim-policy';

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

interface Marked {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
}

/**
 * How a target object relates to a managed resource:
 * - ours: marked by this control plane for this very resource (same uid);
 * - restored: marked for a resource of the same kind, namespace and name but another uid. Only one
 *   object can hold a namespace/name, so the earlier one is gone: this is a backup/restore (or a
 *   re-creation), and the object is this resource's to take back;
 * - another: marked by some provider-rook for another resource (or by another control plane);
 * - unmarked: nobody we know made it; adopted only on an explicit import.
 */
export type Relation = 'ours' | 'restored' | 'another' | 'unmarked';

export class OwnershipMarks {
  readonly controlPlaneId: string;

  constructor(controlPlaneId: string) {
    this.controlPlaneId = controlPlaneId;
  }

  /** Selects everything this control plane owns in a target. */
  get selector(): string {
    return `${LABEL_CONTROL_PLANE}=${this.controlPlaneId}`;
  }

  /** Selects what this resource owns (by uid). */
  selectorFor(owner: Owner): string {
    return `${this.selector},${LABEL_OWNER_UID}=${owner.uid}`;
  }

  labels(owner: Owner): Record<string, string> {
    return { [LABEL_CONTROL_PLANE]: this.controlPlaneId, [LABEL_OWNER_UID]: owner.uid };
  }

  annotations(owner: Owner): Record<string, string> {
    return {
      [ANNOTATION_OWNER]: `${owner.resource}/${owner.namespace}/${owner.name}`,
      ...(owner.reclaimPolicy ? { [ANNOTATION_RECLAIM_POLICY]: owner.reclaimPolicy } : {}),
    };
  }

  relation(obj: Marked, owner: Owner): Relation {
    const labels = obj.metadata.labels ?? {};
    if (labels[LABEL_CONTROL_PLANE] === undefined && labels[LABEL_OWNER_UID] === undefined) return 'unmarked';
    const key = this.ownerKey(obj);
    if (!key) return 'another';
    if (key.resource !== owner.resource || key.namespace !== owner.namespace || key.name !== owner.name) return 'another';
    return key.uid === owner.uid ? 'ours' : 'restored';
  }

  /** Ours, or ours to take back after a restore: what this resource may change and delete. */
  mayManage(obj: Marked, owner: Owner): boolean {
    const relation = this.relation(obj, owner);
    return relation === 'ours' || relation === 'restored';
  }

  /** The owning resource if this control plane owns obj. */
  ownerKey(obj: Marked): OwnerKey | undefined {
    const labels = obj.metadata.labels ?? {};
    if (labels[LABEL_CONTROL_PLANE] !== this.controlPlaneId) return undefined;
    const owner = obj.metadata.annotations?.[ANNOTATION_OWNER];
    const uid = labels[LABEL_OWNER_UID];
    const parts = owner?.split('/');
    if (!parts || parts.length !== 3 || !uid) return undefined;
    const [resource, namespace, name] = parts as [string, string, string];
    return { resource, namespace, name, key: `${namespace}/${name}`, uid };
  }

  /** The owner asked for the object to stay when the owner goes away (Retain or Orphan). */
  keptOnRelease(obj: Marked): boolean {
    const policy = obj.metadata.annotations?.[ANNOTATION_RECLAIM_POLICY];
    return policy !== undefined && policy !== 'Delete';
  }
}
