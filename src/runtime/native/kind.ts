// The contract of a native kind: what a backend describes (the object to keep in a target, its
// companions, how to read its readiness) for nativeExternal (external.ts) to keep it there, and how
// what a kind reads of its object shows in the resource's status.
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Client, KubeObjectLike } from '../../kit/kube/client.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import type { ObjectRef, ResourceType } from '../../kit/kube/resources.ts';
import { setBindable, type ConnectionDetails, type ManagedResource } from '../managed/types.ts';
import { setCondition } from '../../kit/conditions.ts';
import { ANNOTATION_EXTERNAL_NAME } from '../../kit/meta.ts';
import { Ready, type Reason } from '../reasons.ts';
import type { OperatorBundle } from '../operators/operator.ts';
import type { OwnedCompanion } from '../ownership/marks.ts';

/** Which generations of a resource's rotating keys exist: the one in use, those still working, those whose grace period ended. */
export interface CredentialsView {
  generation: number;
  outstanding: number[];
  due: number[];
}

export type TargetObject = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    finalizers?: string[];
    creationTimestamp?: string;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  };
  [field: string]: unknown;
};

/** An object a kind keeps beside its target object (a Secret, a Service, a Job), made and proven as ownership/marks.ts says. */
export type Companion = OwnedCompanion<TargetObject>;

export interface Inspection {
  ready: boolean;
  /** Why it is not ready yet (the Ready condition's message). */
  message?: string;
  /** The Ready condition's reason when it is not ready (Unavailable when unset). */
  reason?: Reason;
  connectionDetails?: ConnectionDetails;
  /** Observed state for status.atProvider. */
  atProvider?: Record<string, unknown>;
  /** New keys are being made (what for): the connection details still hold the previous ones. */
  rotating?: string;
}

/** What the kind read of its object, in the resource's status: Ready, atProvider, and bindable once ready. */
export function recordInspection(mr: ManagedResource, inspection: Inspection): void {
  mr.status = {
    ...mr.status,
    conditions: setCondition(mr.status?.conditions, {
      ...(inspection.ready
        ? Ready.available()
        : { ...Ready.unavailable(inspection.message), ...(inspection.reason ? { reason: inspection.reason } : {}) }),
      observedGeneration: mr.metadata.generation,
    }),
    ...(inspection.atProvider ? { atProvider: inspection.atProvider } : {}),
  };
  if (inspection.ready) setBindable(mr);
}

/** What a kind may ask of the runtime while it describes its objects. */
export interface KindContext {
  /** A credential for `purpose`, the same on every call and unknowable outside provider-rook (letters and digits). */
  credential(purpose: string, length: number): string;
  /** Which generation of rotating keys to derive, and older ones still to remove (see rotation.ts). */
  credentials: CredentialsView;
  /** The namespace the kind's operator runs in, in the resource's target (as its Provider says). */
  operatorNamespace?: string;
}

/**
 * Work done in the target before a resource's objects are deleted (e.g. revoking a user a store
 * holds, which deleting Kubernetes objects would not): made once, marked ours, and waited for.
 */
export interface Teardown {
  object: Companion;
  /**
   * What keeping something means: false (the default), the rest is deleted as usual (a bucket kept in
   * a shared store); true, the target object and its companions are kept too, marked Retain so no
   * sweep takes them (a store of its own that holds a bucket's objects).
   */
  retainWhenKept?: boolean;
  /**
   * Needed only once this companion got this far (a user was made): before, there is nothing to tear
   * down. Observing records it on the resource when it sees it reached (ANNOTATION_TEARDOWN), because
   * the companion may not stay: a spec change names a new access Job and the reached one is deleted.
   */
  onlyAfter?: { ref: ObjectRef; reached(observed: TargetObject): boolean };
  /**
   * Its work is in a store the target object is not (a bucket user in a shared store), and reads
   * nothing of that object: it runs for a resource whose object was made once (its uid recorded),
   * also when that object is gone or no longer provably ours (deleted or copied over in the target).
   * Else the user made would stay, reachable with the keys its app was given.
   */
  runsWithoutTarget?: boolean;
  /** What it cannot run without (a store's root credentials): when one is gone, nothing is deleted, or, with retainWhenKept, all is kept. */
  requires?: (ObjectRef & { purpose: string })[];
  /**
   * What its object must say before its outcome counts (a merge patch), if it does not yet: a
   * bucket to keep whose reclaim policy still says Delete (the spec changed, no update carried it).
   * Written conditional on the copy read; the outcome waits for it.
   */
  prepare?(observed: TargetObject): Record<string, unknown> | undefined;
  /** Whether it has finished; `kept` says what it left in place on purpose, and why. */
  outcome(observed: TargetObject): TeardownOutcome;
}

export type TeardownOutcome = { done: false; message: string } | { done: true; kept?: string } | { failed: string };

/**
 * Keys derived per generation (ctx.credentials), and how generations ctx.credentials.due leave the
 * target: by work made and waited for (`retire`, a Job that removes them where only it can), or by
 * deleting the companions that hold them (`retiredBy`, whose operator revokes the keys as they go).
 */
export interface Rotation<MR> {
  retire?(mr: MR, externalName: string, ctx: KindContext): { object: Companion; outcome(observed: TargetObject): TeardownOutcome };
  /**
   * The companions of the due generations, in the order they go: each is deleted once the one before
   * it is gone, and the generations are retired when none is left. companions() names none of them.
   */
  retiredBy?(mr: MR, externalName: string, ctx: KindContext): Companion[];
  /** Why this resource's keys cannot rotate after all (e.g. a store without a bucket user), or undefined. */
  cannotRotate?(mr: MR): string | undefined;
}

export interface NativeKind<MR extends ManagedResource> {
  /** The owning kind as "plural.group", recorded in ownership marks. */
  resource: string;
  /** The kind of object kept in the target. */
  target: ResourceType;
  /**
   * The name its object gets when the resource names none (the external-name annotation), where the
   * resource's own name does not fit what the operator derives from it; the resource's name unset.
   */
  externalName?(mr: MR): string;
  /** The target object we want (name and namespace set; no ownership marks: those are added here). */
  desired(mr: MR, externalName: string, ctx: KindContext): TargetObject;
  /** Objects that must exist beside it (e.g. a credentials Secret, a Service), made and owned by us. */
  companions?(mr: MR, externalName: string, ctx: KindContext): Companion[];
  /** What must happen in the target before the objects are deleted (reclaim policy Delete only). */
  teardown?(mr: MR, externalName: string, ctx: KindContext): Teardown | undefined;
  /** Companions of this type and labels that companions() no longer names (an old access Job) are deleted. */
  superseded?: { type: ResourceType; labelSelector: string; matches(labels: Record<string, string>): boolean };
  /**
   * Companions an earlier spec may have made that this one does not want (a store's exposure of
   * another kind, or none): deleted where ours, and dropped from the record, or a LoadBalancer a
   * platform team took away would keep the store reachable.
   */
  retired?(mr: MR, externalName: string): ObjectRef[];
  /** The types companions() returns, for the leak sweeper. */
  companionTypes?: ResourceType[];
  /**
   * Companion types the operator undoes only through the target object (a SeaweedFS user, through
   * its Seaweed's filer: with the Seaweed gone, it waits for good). Deleting, they go first, and the
   * target object only once they are gone.
   */
  undoneThroughTarget?: ResourceType[];
  /**
   * Companion types the operator undoes through another object it serves (a SeaweedFS bucket's
   * user and bucket, through their store's Seaweed): deleting, the resource is gone only once they
   * are, while that object is there. Let go with them still held by the operator's finalizers, the
   * store could be deleted before them, and they would wait for it for good.
   */
  undoneThrough?: { types: ResourceType[]; ref(mr: MR, externalName: string): ObjectRef };
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
    type: ResourceType;
    labelSelector: string;
    targetKey(obj: ReadonlyDeep<TargetObject>): string | undefined;
    /** Cache only metadata and these fields of them (all, when unset): what inspect() reads. */
    keep?: string[];
  }[];
  /**
   * The managed resource (in this one's namespace) whose endpoint this one publishes: a bucket's shared
   * store. While that one cannot prove its endpoint (Ready=False, EndpointNotProven), neither can this
   * one: it is not Ready, and `keys` are withheld from its connection Secret.
   */
  endpointFrom?: { types: ResourceType[]; of(mr: ReadonlyDeep<MR>): { type: ResourceType; name: string } | undefined; keys: string[] };
  /** Paths of the target object (e.g. ".spec.scope") its operator reads only at creation: an import must not change them. */
  fixedAtCreation?: string[];
  /** Fills spec fields the user left empty from what the target holds; true when it changed mr. */
  lateInitialize?(mr: MR, observed: TargetObject): boolean;
  /** How its keys rotate; unset, they cannot, and `cannotRotate` says why. */
  rotation?: Rotation<MR>;
  cannotRotate?: string;
  /** The operator that acts on the target kind, installed on demand when a Provider allows it. */
  operator?: OperatorBundle;
  /**
   * Readiness, connection details and observed state, from the target object and its companions.
   * `read` serves from the target's watch caches (related objects), asking the server on a miss.
   */
  inspect(ctx: {
    client: Client;
    read: ObjectReader;
    mr: MR;
    observed: TargetObject;
    companions: (TargetObject | undefined)[];
    /** The keys in use: with older ones still valid, new ones not yet made are a rotation under way, not an outage. */
    credentials: CredentialsView;
    /** The managed resource its endpoint comes from (endpointFrom), as cached; unset when there is none. */
    upstream?: ReadonlyDeep<ManagedResource>;
    signal: AbortSignal;
  }): Promise<Inspection>;
}

/** A get that may be served from a cache. */
export interface ObjectReader {
  /** What a synced cache of this type and label selection holds, when there is one (no request is made). */
  cached?<T extends KubeObjectLike>(type: ResourceType, labelSelector: string): T[] | undefined;
  get<T extends KubeObjectLike>(
    type: ResourceType,
    key: ObjectKey,
    signal?: AbortSignal,
    /** The uid the object had: a cache that saw that very object deleted answers without asking the server. */
    goneUid?: string,
  ): Promise<T | undefined>;
}

/** The name of a resource's object: the one it records (external-name), else the kind's for it, else its own. */
export function nameOf<MR extends ManagedResource>(kind: Pick<NativeKind<MR>, 'externalName'>, mr: MR): string {
  return mr.metadata.annotations?.[ANNOTATION_EXTERNAL_NAME] || kind.externalName?.(mr) || mr.metadata.name;
}
