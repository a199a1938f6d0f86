// Bi-directional reconciliation: watch what we own in every target (label-selected) and requeue the
// owning managed resource when it or one of its companions changes or disappears, so drift is
// repaired in seconds rather than at the next poll. The watches are the target's shared caches,
// which observe reads from as well.
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Logger } from '../../kit/logger.ts';
import type { ManagedResource } from '../managed/types.ts';
import type { NativeKind, TargetObject } from './kind.ts';
import type { OwnershipMarks } from '../ownership/marks.ts';
import type { Target, TargetHooks } from '../providers/targets.ts';
import { onChange } from '../../kit/controller/handlers.ts';

/** The resources of a kind, by the target they last connected through. */
export interface TargetUsers {
  /** Those that use a target: requeued when its health or credentials change. */
  usedBy?: (fingerprint: string) => Iterable<string>;
  /** Those that import the object with this key there: requeued when what its operator made for it changes. */
  importing?: (fingerprint: string, targetKey: string) => Iterable<string>;
}

export class TargetWatches<MR extends ManagedResource> implements TargetHooks {
  private readonly kind: NativeKind<MR>;
  private readonly marks: OwnershipMarks;
  private readonly enqueue: (key: string) => void;
  private readonly log: Logger;
  private readonly users: TargetUsers;

  /** `users` says which resources use a target, and which import an object there. */
  constructor(kind: NativeKind<MR>, marks: OwnershipMarks, enqueue: (key: string) => void, log: Logger, users: TargetUsers = {}) {
    this.kind = kind;
    this.marks = marks;
    this.enqueue = enqueue;
    this.log = log;
    this.users = users;
  }

  private requeueAll(target: Target, why: string): void {
    const keys = [...(this.users.usedBy?.(target.fingerprint) ?? [])];
    this.log.info(why, { target: target.server, kind: this.kind.target.kind, resources: keys.length });
    for (const key of keys) this.enqueue(key);
  }

  started(target: Target): void {
    const { informers } = target;
    informers.onHealth({
      recovered: () => this.requeueAll(target, 'target reachable again; requeueing its resources'),
      failed: () => this.requeueAll(target, 'target unreachable; rechecking its resources'),
    });
    const requeueOwner = (obj: ReadonlyDeep<TargetObject>): void => {
      // Claimed, not proven: a wake-up costs a reconcile, which proves before it acts.
      const owner = this.marks.claimedOwner(obj);
      if (owner?.resource === this.kind.resource) this.enqueue(owner.key);
    };
    const owned = informers.informer<TargetObject>(this.kind.target, { labelSelector: this.marks.selector });
    onChange(owned, requeueOwner, { on: ['updated', 'deleted'] });
    // Companions are shared between kinds (Secrets, Services): each kind takes only its own.
    for (const type of this.kind.companionTypes ?? []) {
      onChange(informers.informer<TargetObject>(type, { labelSelector: this.marks.selector }), requeueOwner, {
        on: ['updated', 'deleted'],
      });
    }
    for (const rel of this.kind.related ?? []) {
      const viaTarget = (obj: ReadonlyDeep<TargetObject>): void => {
        const key = rel.targetKey(obj);
        if (!key) return;
        const ours = owned.get(key);
        if (ours) requeueOwner(ours);
        // An imported object carries no marks of ours (observed only, or not taken over yet).
        else for (const k of this.users.importing?.(target.fingerprint, key) ?? []) this.enqueue(k);
      };
      onChange(informers.informer<TargetObject>(rel.type, { labelSelector: rel.labelSelector, keep: rel.keep }), viaTarget);
    }
    this.log.debug('watching target for drift', { target: target.server, kind: this.kind.target.kind });
  }

  /** The target's client is closed (e.g. its credentials were rotated): its resources connect again. */
  stopped(target: Target): void {
    this.requeueAll(target, 'target client closed; requeueing its resources');
  }
}
