// Ownership marks on every object we create in a target cluster: they say which control plane and
// which managed resource own it. We change nothing without them (except on an explicit import), and
// they are how we find our own leaks.

export const LABEL_CONTROL_PLANE = 'rook.crossplane.io/control-plane';
export const LABEL_OWNER_UID = 'rook.crossplane.io/owner-uid';
export const ANNOTATION_OWNER = 'rook.crossplane.io/owner';

export interface Owner {
  /** e.g. objectstores.minio.rook.crossplane.io */
  resource: string;
  namespace: string;
  name: string;
  uid: string;
}

interface Marked {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
}

export class OwnershipMarks {
  readonly controlPlaneId: string;

  constructor(controlPlaneId: string) {
    this.controlPlaneId = controlPlaneId;
  }

  /** Selects everything this control plane owns in a target. */
  get selector(): string {
    return `${LABEL_CONTROL_PLANE}=${this.controlPlaneId}`;
  }

  labels(owner: Owner): Record<string, string> {
    return { [LABEL_CONTROL_PLANE]: this.controlPlaneId, [LABEL_OWNER_UID]: owner.uid };
  }

  annotations(owner: Owner): Record<string, string> {
    return { [ANNOTATION_OWNER]: `${owner.resource}/${owner.namespace}/${owner.name}` };
  }

  isOwnedBy(obj: Marked, owner: Owner): boolean {
    const labels = obj.metadata.labels ?? {};
    return labels[LABEL_CONTROL_PLANE] === this.controlPlaneId && labels[LABEL_OWNER_UID] === owner.uid;
  }

  /** The owning resource's "namespace/name" if this control plane owns obj. */
  ownerKey(obj: Marked): { resource: string; key: string; uid: string } | undefined {
    const labels = obj.metadata.labels ?? {};
    if (labels[LABEL_CONTROL_PLANE] !== this.controlPlaneId) return undefined;
    const owner = obj.metadata.annotations?.[ANNOTATION_OWNER];
    const uid = labels[LABEL_OWNER_UID];
    const parts = owner?.split('/');
    if (!parts || parts.length !== 3 || !uid) return undefined;
    return { resource: parts[0]!, key: `${parts[1]}/${parts[2]}`, uid };
  }
}
