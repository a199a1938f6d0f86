// nativeExternal: the generic ExternalClient for "the external resource is a Kubernetes object in
// another cluster". A small per-kind description (NativeKind) says what object to keep there; this
// file does observe / diff / apply / delete, ownership, the target namespace and companion objects.
import { Ready, ReasonedError, setCondition } from '../conditions.ts';
import type { EventRecorder } from '../events.ts';
import { sameJson } from '../json.ts';
import type { Deletion, KubeClient, KubeObjectLike } from '../kube/client.ts';
import { anyLiveIn, describeContents, namespaceContents } from '../kube/discovery.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import { Namespaces, type ResourceType } from '../kube/resources.ts';
import { ANNOTATION_CREATE_PENDING, ANNOTATION_EXTERNAL_NAME, externalNameOf, isDeleting } from '../meta.ts';
import { setBindable, type ConnectionDetails, type ExternalClient, type ExternalDeletion, type ExternalObservation, type ManagedResource } from '../managed/types.ts';
import type { OperatorBundle } from './operator.ts';
import type { OwnershipMarks, Owner, Relation } from './ownership.ts';
import { Coalescer } from '../coalesce.ts';

export type TargetObject = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & {
    labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string; creationTimestamp?: string;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  };
  [field: string]: unknown;
};

export interface ObjectRef {
  type: ResourceType;
  name: string;
  namespace?: string;
}

export interface Companion extends ObjectRef {
  /** What it is for, in messages (e.g. "access-keys Secret"). */
  purpose: string;
  /** The object we want. Kept in this shape, unless irreplaceable. */
  build(): TargetObject;
  /**
   * For what cannot be remade once the target object uses it (keys a running server holds): made
   * only together with the target object and never again. Losing it later is reported, with this
   * reason and remedy, instead of being papered over with a new one.
   */
  irreplaceable?: { reason: string; remedy: string };
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
  /** Objects that must exist beside it (e.g. a credentials Secret, a Service), made and owned by us. */
  companions?(mr: MR, externalName: string): Companion[];
  /** The types companions() returns, for the leak sweeper. */
  companionTypes?: ResourceType[];
  /** Objects the target object itself names (e.g. its credentials Secret): on import, these may be used though we did not make them. */
  references?(observed: TargetObject): ObjectRef[];
  /**
   * What the operator makes for each target object, pointing back at it by uid. Removed with it
   * under reclaim policy Delete: an operator's owner references may be beyond the garbage collector.
   */
  dependents?: { type: ResourceType; labelSelector(target: TargetObject): string }[];
  /** Types inspect() reads (get) besides the target object and its companions; for the target RBAC. */
  reads?: ResourceType[];
  /** Other target objects whose changes matter (e.g. what an operator creates), mapped to our object's "namespace/name". */
  related?: {
    type: ResourceType; labelSelector: string; targetKey(obj: TargetObject): string | undefined;
    /** Cache only metadata and these fields of them (all, when unset): what inspect() reads. */
    keep?: string[];
  }[];
  /** Paths of the target object (e.g. ".spec.scope") its operator reads only at creation: an import must not change them. */
  fixedAtCreation?: string[];
  /** Fills spec fields the user left empty from what the target holds; true when it changed mr. */
  lateInitialize?(mr: MR, observed: TargetObject): boolean;
  /** The operator that acts on the target kind, installed on demand when a Provider allows it. */
  operator?: OperatorBundle;
  /**
   * Readiness, connection details and observed state, from the target object and its companions.
   * `read` serves from the target's watch caches (related objects), asking the server on a miss.
   */
  inspect(ctx: { client: KubeClient; read: ObjectReader; mr: MR; observed: TargetObject; companions: (TargetObject | undefined)[]; signal: AbortSignal }): Promise<Inspection>;
}

export function ownerOf(resource: string, mr: ManagedResource): Owner {
  return { resource, namespace: mr.metadata.namespace ?? '', name: mr.metadata.name, uid: mr.metadata.uid ?? '', reclaimPolicy: mr.spec.reclaimPolicy ?? 'Delete' };
}

/** The user asked to adopt an existing object by naming it before we ever tried to create one. */
function importRequested(mr: ManagedResource): boolean {
  const annotations = mr.metadata.annotations ?? {};
  return Boolean(annotations[ANNOTATION_EXTERNAL_NAME]) && !annotations[ANNOTATION_CREATE_PENDING];
}

const describe = (ref: ObjectRef): string => `${ref.type.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
const refKey = (ref: ObjectRef): string => `${ref.type.apiVersion}/${ref.type.kind}/${ref.namespace ?? ''}/${ref.name}`;

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

const OBJECT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const namespaceCreations = new WeakMap<KubeClient, Map<string, Promise<void>>>();
/**
 * Stores deleted together from one namespace check it together: otherwise each of the last ones
 * lists every namespaced type (16 workers: 16 times 40 lists at the end of a namespace).
 */
const namespaceChecks = new WeakMap<KubeClient, Coalescer<{ why: string; byStores: boolean } | undefined>>();

/** A get that may be served from a cache. */
export interface ObjectReader {
  get<T extends KubeObjectLike>(type: ResourceType, name: string, namespace: string | undefined, signal?: AbortSignal): Promise<T | undefined>;
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
}

export class NativeExternal<MR extends ManagedResource> implements ExternalClient<MR> {
  private readonly kind: NativeKind<MR>;
  private readonly client: KubeClient;
  private readonly marks: OwnershipMarks;
  private readonly opts: NativeExternalOptions;
  private readonly read: ObjectReader;

  constructor(kind: NativeKind<MR>, client: KubeClient, marks: OwnershipMarks, opts: NativeExternalOptions = {}) {
    this.kind = kind;
    this.client = client;
    this.marks = marks;
    this.opts = opts;
    this.read = opts.reader ?? client;
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
    // The annotation has no schema: check it before it becomes part of a request.
    if (name.length > 253 || !OBJECT_NAME.test(name)) {
      throw new ReasonedError('InvalidExternalName',
        `annotation ${ANNOTATION_EXTERNAL_NAME} must be a lower-case DNS-1123 subdomain (a-z, 0-9, "-", ".") of at most 253 characters; it has ${name.length} characters`);
    }
    const owner = this.owner(mr);
    const ref = { type: this.kind.target, name, namespace: this.kind.desired(mr, name).metadata.namespace };
    const observed = await this.read.get<TargetObject>(ref.type, name, ref.namespace, signal);
    if (!observed) {
      if (!isDeleting(mr.metadata)) await this.refuseMovedIdentity(mr, owner, ref, signal);
      return { exists: false, upToDate: false };
    }
    const relation = this.marks.relation(observed, owner);
    // Deleting: only what we may manage is ours to delete; anything else we let go of untouched.
    if (isDeleting(mr.metadata)) return { exists: relation === 'ours' || relation === 'restored', upToDate: true };
    if (relation === 'another') {
      throw new ReasonedError('ExternalResourceOwnedByAnother',
        `${describe(ref)} in the target cluster belongs to another managed resource; it is never adopted. Choose another name`);
    }
    if (relation === 'unmarked' && !importRequested(mr)) {
      throw new ReasonedError('ExternalResourceConflict',
        `${describe(ref)} already exists in the target cluster and is not owned by this resource; it was left untouched. ` +
        `A platform team can adopt it by creating a managed resource with the ${ANNOTATION_EXTERNAL_NAME} annotation; otherwise choose another name`);
    }

    // What the user left unset comes from the target, so adopting an object changes nothing else.
    const lateInitialized = this.kind.lateInitialize?.(mr, observed) ?? false;
    const { found: companions, drift: companionDrift } = await this.checkCompanions(mr, name, observed, signal);
    if (relation === 'unmarked') this.refuseUnappliableImport(mr, name, observed);
    if (relation !== 'ours') {
      return { exists: true, upToDate: false, lateInitialized, diff: relation === 'restored' ? 'taking back the object of a restored resource' : 'adopting the existing object (import)' };
    }

    const desired = this.marked(this.kind.desired(mr, name), owner);
    const drift = [
      ...diffFields(withoutMetadata(desired), withoutMetadata(observed)),
      ...diffFields({ labels: desired.metadata.labels, annotations: desired.metadata.annotations },
        { labels: observed.metadata.labels, annotations: observed.metadata.annotations }).map((p) => `.metadata${p}`),
      ...companionDrift,
    ];
    const inspection = await this.kind.inspect({ client: this.client, read: this.read, mr, observed, companions, signal });
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

  /**
   * Companions are used only when we made them for this resource, or (on import) when the adopted
   * object names them itself: a resource can never point us at someone else's Secret. An import
   * cannot change what the object names (fixedAtCreation), so this holds after adoption too.
   */
  private trusted(mr: MR, c: Companion, have: TargetObject, observed: TargetObject | undefined): Relation {
    const relation = this.marks.relation(have, this.owner(mr));
    if (relation === 'ours' || relation === 'restored') return relation;
    if (relation === 'unmarked' && observed && importRequested(mr) && (this.kind.references?.(observed) ?? []).some((r) => refKey(r) === refKey(c))) return relation;
    throw new ReasonedError('CompanionNotOwned',
      `the ${c.purpose} ${describe(c)} exists in the target cluster but was not made by provider-rook for this resource, so it is not used. ` +
      'Only objects provider-rook made for a resource, or those an imported object names itself, are used');
  }

  private async checkCompanions(mr: MR, name: string, observed: TargetObject, signal: AbortSignal): Promise<{ found: (TargetObject | undefined)[]; drift: string[] }> {
    const wanted = this.kind.companions?.(mr, name) ?? [];
    const found = await Promise.all(wanted.map((c) => this.read.get<TargetObject>(c.type, c.name, c.namespace, signal)));
    const drift: string[] = [];
    wanted.forEach((c, i) => {
      const have = found[i];
      if (!have) {
        if (c.irreplaceable) {
          throw new ReasonedError(c.irreplaceable.reason,
            `the ${c.purpose} ${describe(c)} is gone while ${describe({ type: this.kind.target, name, namespace: observed.metadata.namespace })} still uses it; ` +
            `new ones are not made, because the running store would not know them. ${c.irreplaceable.remedy}`);
        }
        drift.push(`missing ${c.type.kind}`);
        return;
      }
      const relation = this.trusted(mr, c, have, observed);
      if (relation === 'restored') drift.push(`${c.type.kind} of a restored resource`);
      if (relation !== 'unmarked' && !c.irreplaceable) drift.push(...diffFields(withoutMetadata(c.build()), withoutMetadata(have)).map((p) => `${c.type.kind}${p}`));
    });
    return { found, drift };
  }

  /** Adopting a store must not change what its operator would never apply to it. */
  private refuseUnappliableImport(mr: MR, name: string, observed: TargetObject): void {
    const fixed = this.kind.fixedAtCreation ?? [];
    const changed = diffFields(withoutMetadata(this.kind.desired(mr, name)), withoutMetadata(observed))
      .filter((p) => fixed.some((f) => p === f || p.startsWith(`${f}.`) || p.startsWith(`${f}[`)));
    if (changed.length === 0) return;
    throw new ReasonedError('ImportMismatch',
      `cannot adopt ${describe({ type: this.kind.target, name, namespace: observed.metadata.namespace })}: ${changed.join(', ')} differ from this resource's spec, ` +
      'and the operator applies those only when it creates a store. Make the spec match the existing object, or leave those fields unset to take them from it');
  }

  /** Identity is fixed at creation: a resource whose object now lives under another name or namespace moved. */
  private async refuseMovedIdentity(mr: MR, owner: Owner, ref: ObjectRef, signal: AbortSignal): Promise<void> {
    // Only a resource that was created or imported has an object to find (and it costs a list).
    if (!mr.metadata.annotations?.[ANNOTATION_EXTERNAL_NAME]) return;
    // A 404 means the kind is not served (yet): then nothing of it exists anywhere.
    const { items } = await this.client.list<TargetObject>(this.kind.target, { labelSelector: this.marks.selectorFor(owner), signal })
      .catch((err: unknown) => { if (isNotFound(err)) return { items: [] }; throw err; });
    const elsewhere = items.find((o) => o.metadata.name !== ref.name || (o.metadata.namespace ?? undefined) !== ref.namespace);
    if (!elsewhere) return;
    throw new ReasonedError('IdentityChanged',
      `this resource's object in the target cluster is ${describe({ ...ref, name: elsewhere.metadata.name, namespace: elsewhere.metadata.namespace })}, ` +
      `but its external-name and target namespace now say ${describe(ref)}. These cannot change after creation: set them back, ` +
      'or delete this resource and create a new one');
  }

  async create(mr: MR, signal: AbortSignal): Promise<{ connectionDetails?: ConnectionDetails }> {
    await this.apply(mr, true, signal);
    return {};
  }

  async update(mr: MR, signal: AbortSignal): Promise<{ connectionDetails?: ConnectionDetails }> {
    await this.apply(mr, false, signal);
    return {};
  }

  private async apply(mr: MR, creating: boolean, signal: AbortSignal): Promise<void> {
    const name = externalNameOf(mr.metadata);
    const owner = this.owner(mr);
    const desired = this.marked(this.kind.desired(mr, name), owner);
    await this.opts.prerequisite?.(signal);
    if (this.kind.target.namespaced && desired.metadata.namespace) await this.ensureNamespace(desired.metadata.namespace, owner, signal);
    // Every companion is checked before anything is written, so no store is ever made that names
    // someone else's Secret.
    const observed = await this.client.get<TargetObject>(this.kind.target, name, desired.metadata.namespace, signal);
    const companions = this.kind.companions?.(mr, name) ?? [];
    const found = await Promise.all(companions.map((c) => this.client.get<TargetObject>(c.type, c.name, c.namespace, signal)));
    const relations = companions.map((c, i) => (found[i] ? this.trusted(mr, c, found[i], observed) : undefined));
    for (const [i, c] of companions.entries()) {
      if (!found[i]) {
        if (creating || !c.irreplaceable) await this.client.create(c.type, this.marked(c.build(), owner), signal).catch(ignoreAlreadyExists);
      } else if (relations[i] !== 'unmarked' && !c.irreplaceable) {
        await this.client.apply(c.type, this.marked(c.build(), owner), signal);
      } else if (relations[i] === 'restored') {
        const { labels, annotations } = this.marked(found[i], owner).metadata;
        await this.client.mergePatch(c.type, c.name, c.namespace, { metadata: { labels, annotations } }, signal);
      }
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

  async delete(mr: MR, signal: AbortSignal): Promise<ExternalDeletion> {
    const name = externalNameOf(mr.metadata);
    const owner = this.owner(mr);
    const namespace = this.kind.desired(mr, name).metadata.namespace;
    // What the operator made goes first: should this pass fail after the object is gone, the next one
    // would find nothing to delete and let the finalizer go, and nothing else removes them.
    const target = await this.deleteIfOurs({ type: this.kind.target, name, namespace }, owner, signal, (observed) => deleteDependents(this.client, this.kind, observed, signal));
    // Again: an operator still acting on the object may have made one in between.
    if (target.observed) await deleteDependents(this.client, this.kind, target.observed, signal);
    await Promise.all((this.kind.companions?.(mr, name) ?? []).map((c) => this.deleteIfOurs(c, owner, signal)));
    if (namespace) {
      let checks = namespaceChecks.get(this.client);
      if (!checks) namespaceChecks.set(this.client, (checks = new Coalescer()));
      const kept = await checks.run(`${this.kind.target.apiVersion}/${this.kind.target.plural} ${namespace}`,
        () => deleteNamespaceIfUnused(this.client, this.marks, namespace, this.kind.target, signal));
      // Other stores still living there is the usual case of a shared namespace, not news.
      if (kept && !kept.byStores) this.opts.recorder?.normal(mr, 'KeptTargetNamespace', kept.why);
    }
    return { gone: target.outcome !== 'pending' };
  }

  /**
   * Deletes the object if it carries our marks, proven by the copy we checked: the delete is
   * conditional on its uid and resourceVersion, so a cached copy proves as much as a fresh read.
   * A conflict (it changed since) is checked once more against the server. `before` runs on the
   * copy just before its delete; the copy is returned even if a retry finds the object gone.
   */
  private async deleteIfOurs(ref: ObjectRef, owner: Owner, signal: AbortSignal, before?: (observed: TargetObject) => Promise<void>):
    Promise<{ outcome: Deletion | 'notOurs'; observed?: TargetObject }> {
    let seen: TargetObject | undefined;
    for (let attempt = 0; ; attempt++) {
      const observed = await (attempt === 0 ? this.read : this.client).get<TargetObject>(ref.type, ref.name, ref.namespace, signal);
      if (!observed) return { outcome: 'absent', observed: seen };
      if (!this.marks.mayManage(observed, owner)) return { outcome: 'notOurs' };
      seen = observed;
      await before?.(observed);
      try {
        const outcome = await this.client.delete(ref.type, ref.name, ref.namespace, { uid: observed.metadata.uid, resourceVersion: observed.metadata.resourceVersion, signal });
        return { outcome, observed };
      } catch (err) {
        if (!isConflict(err)) throw err;
        // Not a stale copy of the managed resource (which the reconciler retries quietly): say so.
        if (attempt > 0) throw new ReasonedError('TargetObjectChanging', `${describe(ref)} in the target cluster changed while it was being deleted; retrying`);
      }
    }
  }
}

/** Deletes what the operator made for `target` (proven by the ownerReference's uid). */
export async function deleteDependents(client: KubeClient, kind: Pick<NativeKind<ManagedResource>, 'dependents'>, target: TargetObject, signal?: AbortSignal): Promise<void> {
  // All at once: the order among them does not matter, and a deletion's time is a chain of round trips.
  await Promise.all((kind.dependents ?? []).map(async (dep) => {
    const { items } = await client.list<TargetObject>(dep.type, { namespace: target.metadata.namespace, labelSelector: dep.labelSelector(target), signal });
    await Promise.all(items
      .filter((item) => !item.metadata.deletionTimestamp && item.metadata.ownerReferences?.some((r) => r.uid === target.metadata.uid))
      .map((item) => client.delete(dep.type, item.metadata.name, item.metadata.namespace, { uid: item.metadata.uid, signal })));
  }));
}

/**
 * Deletes a target namespace that this control plane created, but only when a check of every
 * namespaced type finds nothing else in it. Returns why it was kept, if it was (and is ours).
 */
export async function deleteNamespaceIfUnused(client: KubeClient, marks: OwnershipMarks, namespace: string, stores: ResourceType, signal?: AbortSignal): Promise<{ why: string; byStores: boolean } | undefined> {
  // Both at once (one round trip). Cheap first: other stores there keep it, and the full check (a
  // list per type) is not needed.
  const [ns, othersLive] = await Promise.all([client.get<TargetObject>(Namespaces, namespace, undefined, signal), anyLiveIn(client, stores, namespace, signal)]);
  if (!ns || ns.metadata.deletionTimestamp || !marks.ownerKey(ns)) return undefined;
  if (othersLive) return { why: `kept namespace ${namespace} in the target cluster: other ${stores.kind}s live there`, byStores: true };
  const contents = await namespaceContents(client, namespace, signal);
  if (contents.found.length || contents.unchecked.length) return { why: `kept namespace ${namespace} in the target cluster: ${describeContents(contents)}`, byStores: false };
  await client.delete(Namespaces, namespace, undefined, { uid: ns.metadata.uid, signal });
  return undefined;
}

function withoutMetadata(obj: TargetObject): Record<string, unknown> {
  const { metadata: _m, apiVersion: _a, kind: _k, status: _s, ...rest } = obj;
  return rest;
}

function ignoreAlreadyExists(err: unknown): void {
  if ((err as { code?: number; reason?: string }).code === 409) return;
  throw err;
}
