// One pass of the generic ExternalClient (external.ts) over one managed resource: who the resource
// is in the target (its external name, and its ownership: owner, vouchers and the trust rules that
// observe, apply and delete share, in ownership/marks.ts), and where the pass reads and writes. It
// is made once per call, so each phase takes this one object rather than a bag of callbacks and a
// row of parameters.
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { KubeClient } from '../../kit/kube/client.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import type { ObjectRef, ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import { ResourceOwnership, type OwnershipMarks, type Owner, type Vouchers } from '../ownership/marks.ts';
import type { Reason } from '../reasons.ts';
import { nameOf, type Companion, type KindContext, type NativeKind, type ObjectReader, type TargetObject } from './kind.ts';
import { planFor, type RotationPlan } from './rotation.ts';

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
  /** The namespace the kind's operator runs in, in this target (KindContext.operatorNamespace). */
  operatorNamespace?: string;
  /** The resources that live in this one's store and are not gone yet (store-users.ts): its deletion waits for them. */
  usedBy?: (mr: ManagedResource, signal: AbortSignal) => Promise<string[]>;
  /**
   * Why nothing may be made in the target (a deletion in a namespace its Provider no longer allows):
   * what is ours there is still deleted, but no teardown work is made there.
   */
  makesNothing?: string;
  /**
   * Whether the resource, read live, is still this one and still held by our finalizer: a pass from
   * a cache behind a deletion that ended makes nothing for it (a teardown run on its record alone).
   */
  stillHeld?: (mr: ManagedResource, signal: AbortSignal) => Promise<boolean>;
}

/** Where a pass reads and writes in the target: `read` may be a cache (a first look only), `client` is live. */
export interface TargetAccess {
  client: KubeClient;
  read: ObjectReader;
  marks: OwnershipMarks;
  signal: AbortSignal;
}

/** What kinds may ask of the runtime: credentials derived from the ownership key, and which generation of rotating keys to use. */
export const kindContext = (marks: OwnershipMarks, plan?: RotationPlan, operatorNamespace?: string): KindContext => ({
  credential: (purpose, length) => marks.credential(purpose, length),
  credentials: plan?.view ?? { generation: 0, outstanding: [], due: [] },
  ...(operatorNamespace ? { operatorNamespace } : {}),
});

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
  /** Who the resource is in the target, and the trust rules for its objects. */
  readonly ownership: ResourceOwnership<TargetObject>;
  readonly owner: Owner;
  readonly vouchers: Vouchers;
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
    this.name = nameOf(this.kind, mr);
    this.ownership = new ResourceOwnership(this.marks, this.kind, mr);
    ({ owner: this.owner, vouchers: this.vouchers } = this.ownership);
  }

  /**
   * The kind's context from the resource's recorded keys only: a rotation is decided (and recorded)
   * by observe, so a write never uses keys the record does not name.
   */
  recorded(): KindContext {
    return this.context(this.rotation(false));
  }

  /** The kind's context in this pass, with the keys of `plan`. */
  context(plan?: RotationPlan): KindContext {
    return kindContext(this.marks, plan, this.opts.operatorNamespace);
  }

  /**
   * What this pass does with the resource's keys (a rotation only where `mayWrite`). Keys a consumer
   * still holds stay in every phase: observe does not call for their removal, nor does apply or
   * delete remove them on its way.
   */
  rotation(mayWrite: boolean): RotationPlan {
    return planFor(this.kind, this.mr, this.now(), mayWrite, this.opts.retirementHold?.(this.mr));
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

  /** A Warning Event on the resource. */
  warn(reason: Reason, message: string): void {
    this.opts.recorder?.warning(this.mr, reason, message);
  }
}
