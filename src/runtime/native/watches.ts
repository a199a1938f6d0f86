// Bi-directional reconciliation: watch what we own in every target (label-selected) and requeue the
// owning managed resource when it changes or disappears, so drift is repaired in seconds rather
// than at the next poll.
import { Informer } from '../informer.ts';
import type { Logger } from '../logger.ts';
import type { ManagedResource } from '../managed/types.ts';
import type { NativeKind, TargetObject } from './external.ts';
import type { OwnershipMarks } from './ownership.ts';
import type { Target, TargetHooks } from './targets.ts';

export class TargetWatches<MR extends ManagedResource> implements TargetHooks {
  private readonly running = new Map<string, Informer<TargetObject>[]>();
  private readonly kind: NativeKind<MR>;
  private readonly marks: OwnershipMarks;
  private readonly enqueue: (key: string) => void;
  private readonly log: Logger;

  private readonly usedBy: (fingerprint: string) => Iterable<string>;

  /** usedBy names the resources that last connected through a target: requeued when it is reachable again. */
  constructor(kind: NativeKind<MR>, marks: OwnershipMarks, enqueue: (key: string) => void, log: Logger, usedBy: (fingerprint: string) => Iterable<string> = () => []) {
    this.kind = kind;
    this.marks = marks;
    this.enqueue = enqueue;
    this.log = log;
    this.usedBy = usedBy;
  }

  started(target: Target): void {
    const log = this.log.with({ target: target.server });
    const requeueAll = (why: string) => (): void => {
      const keys = [...this.usedBy(target.fingerprint)];
      log.info(why, { kind: this.kind.target.kind, resources: keys.length });
      for (const key of keys) this.enqueue(key);
    };
    const owned = new Informer<TargetObject>(target.client, this.kind.target, {
      labelSelector: this.marks.selector, log,
      // Back from an outage: whatever waits in a retry backoff for this target is retried now.
      onRecovered: requeueAll('target reachable again; requeueing its resources'),
      // Gone: its resources report Unreachable now rather than at their next poll.
      onFailed: requeueAll('target unreachable; rechecking its resources'),
    });
    const requeueOwner = (obj: TargetObject): void => {
      const owner = this.marks.ownerKey(obj);
      if (owner?.resource === this.kind.resource) this.enqueue(owner.key);
    };
    owned.on({ updated: (_old, obj) => requeueOwner(obj), deleted: requeueOwner });
    const informers = [owned];
    for (const rel of this.kind.related ?? []) {
      const related = new Informer<TargetObject>(target.client, rel.type, { labelSelector: rel.labelSelector, log });
      const viaTarget = (obj: TargetObject): void => {
        const key = rel.targetKey(obj);
        const ours = key ? owned.get(key) : undefined;
        if (ours) requeueOwner(ours);
      };
      related.on({ added: viaTarget, updated: (_old, obj) => viaTarget(obj), deleted: viaTarget });
      informers.push(related);
    }
    this.running.set(target.fingerprint, informers);
    for (const inf of informers) void inf.start();
    log.debug('watching target for drift', { kind: this.kind.target.kind });
  }

  async stopped(target: Target): Promise<void> {
    await Promise.all((this.running.get(target.fingerprint) ?? []).map((i) => i.stop()));
    this.running.delete(target.fingerprint);
  }
}

