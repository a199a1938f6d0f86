// nativeExternal: the generic ExternalClient for "the external resource is a Kubernetes object in
// another cluster". A small per-kind description (NativeKind) says what object to keep there; this
// file does observe / diff / apply / delete, ownership, the target namespace and companion objects.
import { Ready, ReasonedError, setCondition } from '../conditions.ts';
import { sameJson } from '../json.ts';
import type { KubeClient, KubeObjectLike } from '../kube/client.ts';
import {
  ConfigMaps, Deployments, Namespaces, PersistentVolumeClaims, Pods, Secrets, ServiceAccounts, Services, StatefulSets, type ResourceType,
} from '../kube/resources.ts';
import { ANNOTATION_CREATE_PENDING, ANNOTATION_EXTERNAL_NAME, externalNameOf, isDeleting } from '../meta.ts';
import { setBindable, type ConnectionDetails, type ExternalClient, type ExternalObservation, type ManagedResource } from '../managed/types.ts';
import type { OperatorBundle } from './operator.ts';
import type { OwnershipMarks, Owner } from './ownership.ts';

export type TargetObject = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & { labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string };
  [field: string]: unknown;
};

export interface Companion {
  type: ResourceType;
  name: string;
  namespace?: string;
  /** Builds the object to create when it is missing; an existing one is never changed. */
  build(): TargetObject;
}

export interface Inspection {
  ready: boolean;
  /** Why it is not ready yet (the Ready condition's message). */
  message?: string;
  connectionDetails?: ConnectionDetails;
  /** Observed state for status.atProvider. */
  atProvider?: Record<string, unknown>;
}

export interface NativeKind<MR extends ManagedResource> {
  /** The owning kind as "plural.group", recorded in ownership marks. */
  resource: string;
  /** The kind of object kept in the target. */
  target: ResourceType;
  /** The target object we want (name and namespace set; no ownership marks: those are added here). */
  desired(mr: MR, externalName: string): TargetObject;
  /** Objects that must exist beside it (e.g. a credentials Secret); created when missing, never overwritten. */
  companions?(mr: MR, externalName: string): Companion[];
  /** Other target objects whose changes matter (e.g. what an operator creates), mapped to our object's "namespace/name". */
  related?: { type: ResourceType; labelSelector: string; targetKey(obj: TargetObject): string | undefined }[];
  /** Fills spec fields the user left empty from what the target holds; true when it changed mr. */
  lateInitialize?(mr: MR, observed: TargetObject): boolean;
  /** The operator that acts on the target kind, installed on demand when a Provider allows it. */
  operator?: OperatorBundle;
  /** Readiness, connection details and observed state, from the target object and its companions. */
  inspect(ctx: { client: KubeClient; mr: MR; observed: TargetObject; companions: (TargetObject | undefined)[]; signal: AbortSignal }): Promise<Inspection>;
}

export function ownerOf(resource: string, mr: ManagedResource): Owner {
  return { resource, namespace: mr.metadata.namespace ?? '', name: mr.metadata.name, uid: mr.metadata.uid ?? '' };
}

/** The user asked to adopt an existing object by naming it before we ever tried to create one. */
function importRequested(mr: ManagedResource): boolean {
  const annotations = mr.metadata.annotations ?? {};
  return Boolean(annotations[ANNOTATION_EXTERNAL_NAME]) && !annotations[ANNOTATION_CREATE_PENDING];
}

/** Fields of `want` that `have` lacks or holds differently (have may carry more). */
export function diffFields(want: unknown, have: unknown, path = ''): string[] {
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    if (have === null || typeof have !== 'object' || Array.isArray(have)) return [path || '.'];
    return Object.entries(want).flatMap(([k, v]) => (v === undefined ? [] : diffFields(v, (have as Record<string, unknown>)[k], `${path}.${k}`)));
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return [path];
    return want.flatMap((v, i) => diffFields(v, have[i], `${path}[${i}]`));
  }
  return sameJson(want, have) ? [] : [path];
}

const namespaceCreations = new WeakMap<KubeClient, Map<string, Promise<void>>>();

// What a namespace holds by itself; anything else means someone else lives there.
const NAMESPACE_DEFAULTS: Record<string, Set<string>> = { ConfigMap: new Set(['kube-root-ca.crt']), ServiceAccount: new Set(['default']) };
const NAMESPACE_CONTENT: ResourceType[] = [Pods, Services, Secrets, ConfigMaps, ServiceAccounts, StatefulSets, Deployments, PersistentVolumeClaims];

export class NativeExternal<MR extends ManagedResource> implements ExternalClient<MR> {
  private readonly kind: NativeKind<MR>;
  private readonly client: KubeClient;
  private readonly marks: OwnershipMarks;
  private readonly prerequisite?: (signal: AbortSignal) => Promise<void>;

  /** prerequisite runs before every write to the target (e.g. making sure the operator is installed). */
  constructor(kind: NativeKind<MR>, client: KubeClient, marks: OwnershipMarks, prerequisite?: (signal: AbortSignal) => Promise<void>) {
    this.kind = kind;
    this.client = client;
    this.marks = marks;
    this.prerequisite = prerequisite;
  }

  private owner(mr: MR): Owner {
    return ownerOf(this.kind.resource, mr);
  }

  private marked<T extends TargetObject>(obj: T, owner: Owner): T {
    return {
      ...obj,
      metadata: {
        ...obj.metadata,
        labels: { ...obj.metadata.labels, ...this.marks.labels(owner) },
        annotations: { ...obj.metadata.annotations, ...this.marks.annotations(owner) },
      },
    };
  }

  async observe(mr: MR, signal: AbortSignal): Promise<ExternalObservation> {
    const name = externalNameOf(mr.metadata);
    const owner = this.owner(mr);
    const desired = this.marked(this.kind.desired(mr, name), owner);
    const { type, ns } = { type: this.kind.target, ns: desired.metadata.namespace };
    const observed = await this.client.get<TargetObject>(type, name, ns, signal);
    if (!observed) return { exists: false, upToDate: false };

    if (!this.marks.isOwnedBy(observed, owner)) {
      if (isDeleting(mr.metadata)) return { exists: false, upToDate: true }; // never ours to delete
      if (!importRequested(mr)) {
        throw new ReasonedError('ExternalResourceConflict',
          `${type.kind} ${ns ? `${ns}/` : ''}${name} already exists in the target cluster and is not owned by this resource; ` +
          `it was left untouched. Set the ${ANNOTATION_EXTERNAL_NAME} annotation to adopt it, or choose another name`);
      }
      // What the user left unset comes from the adopted object, so adopting it changes nothing else.
      const lateInitialized = this.kind.lateInitialize?.(mr, observed) ?? false;
      return { exists: true, upToDate: false, lateInitialized, diff: 'adopting the existing object (import)' };
    }

    const wanted = this.kind.companions?.(mr, name) ?? [];
    const companions = await Promise.all(wanted.map((c) => this.client.get<TargetObject>(c.type, c.name, c.namespace, signal)));
    const drift = [
      ...diffFields(withoutMetadata(desired), withoutMetadata(observed)),
      ...diffFields({ labels: desired.metadata.labels, annotations: desired.metadata.annotations },
        { labels: observed.metadata.labels, annotations: observed.metadata.annotations }).map((p) => `.metadata${p}`),
      ...companions.flatMap((c, i) => (c ? [] : [`missing ${wanted[i]!.type.kind}`])),
    ];

    const lateInitialized = this.kind.lateInitialize?.(mr, observed) ?? false;
    const inspection = await this.kind.inspect({ client: this.client, mr, observed, companions, signal });
    mr.status = {
      ...mr.status,
      conditions: setCondition(mr.status?.conditions, {
        ...(inspection.ready ? Ready.available() : Ready.unavailable(inspection.message)),
        observedGeneration: mr.metadata.generation,
      }),
      ...(inspection.atProvider ? { atProvider: inspection.atProvider } : {}),
    };
    if (inspection.ready) setBindable(mr);
    return { exists: true, upToDate: drift.length === 0, lateInitialized, connectionDetails: inspection.connectionDetails, diff: drift.join(', ') || undefined };
  }

  async create(mr: MR, signal: AbortSignal): Promise<{ connectionDetails?: ConnectionDetails }> {
    await this.apply(mr, signal);
    return {};
  }

  async update(mr: MR, signal: AbortSignal): Promise<{ connectionDetails?: ConnectionDetails }> {
    await this.apply(mr, signal);
    return {};
  }

  private async apply(mr: MR, signal: AbortSignal): Promise<void> {
    const name = externalNameOf(mr.metadata);
    const owner = this.owner(mr);
    const desired = this.marked(this.kind.desired(mr, name), owner);
    await this.prerequisite?.(signal);
    if (this.kind.target.namespaced && desired.metadata.namespace) await this.ensureNamespace(desired.metadata.namespace, owner, signal);
    for (const c of this.kind.companions?.(mr, name) ?? []) {
      const exists = await this.client.get(c.type, c.name, c.namespace, signal);
      if (!exists) await this.client.create(c.type, this.marked(c.build(), owner), signal).catch(ignoreAlreadyExists);
    }
    await this.client.apply(this.kind.target, desired, signal);
  }

  // Stores that share a namespace on one target create it once, not once each.
  private async ensureNamespace(namespace: string, owner: Owner, signal: AbortSignal): Promise<void> {
    let pending = namespaceCreations.get(this.client);
    if (!pending) namespaceCreations.set(this.client, (pending = new Map()));
    let creation = pending.get(namespace);
    if (!creation) {
      creation = (async () => {
        if (await this.client.get(Namespaces, namespace, undefined, signal)) return;
        await this.client.create(Namespaces, this.marked({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, owner), signal)
          .catch(ignoreAlreadyExists);
      })().finally(() => pending.delete(namespace));
      pending.set(namespace, creation);
    }
    await creation;
  }

  async delete(mr: MR, signal: AbortSignal): Promise<void> {
    const name = externalNameOf(mr.metadata);
    const owner = this.owner(mr);
    const desired = this.kind.desired(mr, name);
    await this.deleteIfOwned(this.kind.target, name, desired.metadata.namespace, owner, signal);
    for (const c of this.kind.companions?.(mr, name) ?? []) await this.deleteIfOwned(c.type, c.name, c.namespace, owner, signal);
    if (desired.metadata.namespace) await this.deleteNamespaceIfEmpty(desired.metadata.namespace, owner, signal);
  }

  private async deleteIfOwned(type: ResourceType, name: string, namespace: string | undefined, owner: Owner, signal: AbortSignal): Promise<void> {
    const obj = await this.client.get<TargetObject>(type, name, namespace, signal);
    if (obj && this.marks.isOwnedBy(obj, owner)) await this.client.delete(type, name, namespace, { uid: obj.metadata.uid, signal });
  }

  /** Deletes a namespace we created for this resource, but only once nothing else lives in it. */
  private async deleteNamespaceIfEmpty(namespace: string, owner: Owner, signal: AbortSignal): Promise<void> {
    const ns = await this.client.get<TargetObject>(Namespaces, namespace, undefined, signal);
    if (!ns || ns.metadata.deletionTimestamp || !this.marks.isOwnedBy(ns, owner)) return;
    if (!(await namespaceIsEmpty(this.client, namespace, [this.kind.target], signal))) return;
    await this.client.delete(Namespaces, namespace, undefined, { uid: ns.metadata.uid, signal });
  }
}

export async function namespaceIsEmpty(client: KubeClient, namespace: string, extraTypes: ResourceType[], signal?: AbortSignal): Promise<boolean> {
  for (const type of [...NAMESPACE_CONTENT, ...extraTypes]) {
    const { items } = await client.list<TargetObject>(type, { namespace, signal });
    const defaults = NAMESPACE_DEFAULTS[type.kind];
    if (items.some((i) => !i.metadata.deletionTimestamp && !defaults?.has(i.metadata.name))) return false;
  }
  return true;
}

function withoutMetadata(obj: TargetObject): Record<string, unknown> {
  const { metadata: _m, apiVersion: _a, kind: _k, status: _s, ...rest } = obj;
  return rest;
}

function ignoreAlreadyExists(err: unknown): void {
  if ((err as { code?: number; reason?: string }).code === 409) return;
  throw err;
}
