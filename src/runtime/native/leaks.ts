// Finds what we own in target clusters whose managed resource is gone (e.g. its finalizer was
// removed by hand while the provider was down) and deletes it, or only reports it. A leak must be
// proven: its marks by our signature (ownership/marks.ts: copied or unsigned marks are only reported),
// its owner's absence by live reads of the control cluster (never judged from a cache) in two sweeps
// at least the grace period apart, so that a control cluster being restored, whose resources come
// back one by one, has that long to bring an owner back before its objects go; owners in
// namespaces this deployment does not watch are never judged, young objects are left alone, and
// objects whose owner asked to keep them (Retain) are never leaks. A signed copy made after ours (a
// restore from a backup, a re-apply of its manifest) is not ours either: its creationTimestamp is
// not the time we signed when we made it (OwnershipMarks.remade), and it is only reported.
import { readLive } from '../../kit/kube/live.ts';
import { isNotFound } from '../../kit/kube/errors.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { KubeClient } from '../../kit/kube/client.ts';
import { Namespaces, type ResourceType } from '../../kit/kube/resources.ts';
import type { Logger } from '../../kit/logger.ts';
import type { ManagedResource } from '../managed/types.ts';
import { deleteDependents } from './delete.ts';
import type { NativeKind, TargetObject } from './kind.ts';
import { deleteNamespaceIfUnused, type NamespaceKept } from './namespaces.ts';
import { CLOCK_SKEW_MS, type OwnerKey, type OwnershipMarks } from '../ownership/marks.ts';
import type { ProviderObject as Provider } from '../providers/provider.ts';
import type { Target } from '../providers/targets.ts';
import { Reasons } from '../reasons.ts';
import { type ProviderResolver } from '../providers/resolver.ts';
import type { Cache } from '../../kit/controller/informer.ts';
import { SweepMemory } from './sweep-memory.ts';

/**
 * How long a leaked namespace kept for what else is in it waits before it is checked again. The check
 * lists every namespaced type there (about 40 requests), and what keeps it (a store's data volumes,
 * someone else's objects) seldom goes by itself: a namespace per store would otherwise cost that at
 * every sweep, for as long as it stays.
 */
const KEPT_NAMESPACE_RECHECK_MS = 60 * 60_000;

/** Sweeps on a timer of the grace period start that far apart, give or take this: still two sightings a grace period apart. */
const SWEEP_SLACK_MS = 1_000;

export interface LeakReport {
  target: string;
  kind: string;
  namespace?: string;
  name: string;
  owner: string;
  deleted: boolean;
  /** Why it was not deleted, when it was not (report mode, a namespace still in use, marks not proven). */
  kept?: string;
  /** Its marks are not proven by our signature: never deleted (reported once while it stays, as every leak kept). */
  unproven?: boolean;
}

export interface LeakSweeperOptions<MR extends ManagedResource> {
  kind: NativeKind<MR>;
  marks: OwnershipMarks;
  resolver: ProviderResolver;
  providers: Pick<Cache<Provider>, 'list'>;
  /** The control cluster and the managed kind, to read owners live. */
  control: KubeClient;
  managedType: ResourceType;
  /** The managed kind's cache: an owner found there is alive, and costs no read. Only a miss is checked live. */
  cache?: Pick<Cache<ManagedResource>, 'get'>;
  /** The control-cluster namespaces this deployment watches; unset means all. */
  namespaces?: string[];
  /** Objects younger than this are never judged (their owner may be on its way). */
  graceMs: number;
  /** How far the target's clock and ours may be apart, so that an object we made is not taken for a later copy of it. */
  clockSkewMs?: number;
  reportOnly: boolean;
  recorder: EventRecorder;
  log: Logger;
}

/** One sweep's shared state: its signal and clock, the owners already read, and those whose object it kept. */
interface Pass {
  signal?: AbortSignal;
  now: number;
  /** Whether the owner is gone, read once per sweep (most objects are judged alive by it, at no cost). */
  ownerGone: (owner: OwnerKey) => Promise<boolean>;
  /** The same, read again now: a sweep can take minutes, and an owner restored meanwhile takes its objects back. */
  stillGone: (owner: OwnerKey) => Promise<boolean>;
  /** Owners (by key) whose object this pass found and did not delete: their companions stay with it. */
  keptObjects: Set<string>;
  /** Owners (by uid) the target being swept shows made a bucket user; undefined where that cannot be told. */
  withUsers?: Set<string>;
  /** Records that this sweep read the owner gone; says when an earlier sweep first did, in a row (undefined: none did). */
  goneBefore: (owner: OwnerKey) => number | undefined;
  /** Records that this sweep read the owner there: what was remembered of it being gone is forgotten. */
  alive: (owner: OwnerKey) => void;
}

export class LeakSweeper<MR extends ManagedResource> {
  private readonly o: LeakSweeperOptions<MR>;
  private timer?: NodeJS.Timeout;
  /** Sweeps so far: which target the next one begins with. */
  private sweeps = 0;
  /** The sweep under way, if any. */
  private running?: Promise<void>;
  private stopping?: AbortController;
  /** What the last sweep found that the next needs. */
  private memory = new SweepMemory();

  constructor(opts: LeakSweeperOptions<MR>) {
    this.o = opts;
  }

  /**
   * Sweeps now and every `intervalMs`. A sweep has the interval as its deadline, and none starts while
   * one runs: a target that answers each page of a list just in time would otherwise hold a sweep
   * for hours, and a new one would pile up beside it every interval.
   */
  start(intervalMs: number): void {
    const run = (): void => {
      if (this.running) return;
      this.stopping ??= new AbortController();
      const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(intervalMs)]);
      this.running = this.sweep(signal)
        .then(
          () => undefined,
          (err: Error) => this.o.log.warn('leak sweep failed', { error: err.message }),
        )
        .finally(() => (this.running = undefined));
    };
    run();
    this.timer = setInterval(run, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.stopping?.abort();
    this.stopping = undefined;
  }

  private watches(namespace: string): boolean {
    return !this.o.namespaces || this.o.namespaces.includes(namespace);
  }

  /** One pass over every target any watched Provider names. */
  async sweep(signal?: AbortSignal, now = Date.now()): Promise<LeakReport[]> {
    const targets = await this.resolveTargets(signal);
    // Only what this sweep finds again is remembered, and what it could not look at.
    const last = this.memory;
    const memory = (this.memory = new SweepMemory());
    const goneBefore = (owner: OwnerKey): number | undefined => {
      if (memory.readAlive.has(owner.key)) return undefined;
      const at = last.goneSince.get(owner.key);
      if (!memory.goneSince.has(owner.key)) memory.goneSince.set(owner.key, at ?? now);
      return at;
    };
    const alive = (owner: OwnerKey): void => {
      memory.readAlive.add(owner.key);
      memory.goneSince.delete(owner.key);
    };
    const [ownerGone, stillGone] = [this.ownerCheck(signal), this.ownerCheck(signal, false)];
    const pass: Pass = { signal, now, ownerGone, stillGone, keptObjects: new Set(), goneBefore, alive };
    const reports: LeakReport[] = [];
    // The object itself first, then its companions, then (if nothing else lives there) the namespace.
    const types = [this.o.kind.target, ...(this.o.kind.companionTypes ?? []), Namespaces];
    // Each sweep begins with the next target: one that stalls a sweep to its deadline does not keep
    // the targets after it from ever being swept.
    const order = [...targets.values()];
    const first = order.length ? this.sweeps++ % order.length : 0;
    for (const { target, providers } of [...order.slice(first), ...order.slice(0, first)]) {
      pass.withUsers = this.o.kind.teardown ? await this.ownersWithUsers(target, signal) : new Set();
      for (const type of types) {
        const listed = await this.listMarked(target, type, signal);
        // Its stores not listed, its owners were not read here; a companion's type not listed, they were
        // (with the stores), and an owner whose only object it is is read again by a later sweep.
        if (!listed) memory.keep(last, { fingerprint: target.fingerprint, owners: type === this.o.kind.target });
        // Its stores not listed (a failing conversion webhook, a CRD being replaced): nothing says which
        // companions a kept store still needs (its root keys), so nothing more of this target is judged.
        if (!listed && type === this.o.kind.target) {
          this.o.log.warn('cannot list stores for leaks: nothing of this target is judged in this sweep', {
            kind: type.kind,
            target: target.server,
          });
          break;
        }
        for (const obj of listed ?? []) {
          // Cut off (its deadline, a stop): what is left is judged by the next sweep, and nothing is said of it now.
          if (signal?.aborted) {
            memory.keep(last, { owners: true });
            return reports;
          }
          const keptKey = `${target.fingerprint} ${obj.metadata.uid}`;
          const recheckAt = type === Namespaces ? last.keptNamespaces.get(keptKey) : undefined;
          if (recheckAt !== undefined && now < recheckAt) {
            // Kept for its contents, and said already: not looked at, nor said again, before its next check.
            memory.keptNamespaces.set(keptKey, recheckAt);
            const said = last.reportedKept.get(keptKey);
            if (said !== undefined) memory.reportedKept.set(keptKey, said);
            // Its owner, not read now, is read gone at that check since the time it was first.
            const owner = this.o.marks.claimedOwner(obj);
            const since = owner && !memory.readAlive.has(owner.key) ? last.goneSince.get(owner.key) : undefined;
            if (since !== undefined && !memory.goneSince.has(owner!.key)) memory.goneSince.set(owner!.key, since);
            continue;
          }
          const leak = await this.judge(target, type, obj, pass);
          if (!leak) continue;
          if (type === Namespaces && leak.keptForContents) memory.keptNamespaces.set(keptKey, now + KEPT_NAMESPACE_RECHECK_MS);
          reports.push(leak.report);
          const { kept: why } = leak.report;
          if (why !== undefined) memory.reportedKept.set(keptKey, why);
          if (why !== undefined && last.reportedKept.get(keptKey) === why) continue;
          this.record(leak.report, providers.find((p) => p.metadata.namespace === leak.owner.namespace) ?? providers[0]!);
        }
      }
    }
    return reports;
  }

  /** The targets the watched Providers resolve to, each with the Providers that name it. */
  private async resolveTargets(signal?: AbortSignal): Promise<Map<string, { target: Target; providers: ReadonlyDeep<Provider>[] }>> {
    const targets = new Map<string, { target: Target; providers: ReadonlyDeep<Provider>[] }>();
    for (const provider of this.o.providers.list()) {
      try {
        const target = await this.o.resolver.resolve(provider, signal);
        const entry = targets.get(target.fingerprint) ?? { target, providers: [] };
        entry.providers.push(provider);
        targets.set(target.fingerprint, entry);
      } catch {
        // An unusable Provider is reported by its own status; nothing to sweep there now.
      }
    }
    return targets;
  }

  // Whether an owner is gone: read once per sweep (`once`), or at every call. Any object at its
  // namespace/name counts as alive: a restored resource (new uid) takes its objects back rather than losing them.
  private ownerCheck(signal?: AbortSignal, once = true): (owner: OwnerKey) => Promise<boolean> {
    const verdicts = new Map<string, Promise<boolean>>();
    return (owner) => {
      let verdict = once ? verdicts.get(owner.key) : undefined;
      if (!verdict) {
        if (this.o.cache?.get(owner.key)) return Promise.resolve(false);
        verdict = readLive(this.o.control, this.o.managedType, { namespace: owner.namespace, name: owner.name }, signal).then(
          (mr) => mr === undefined,
        );
        if (once) verdicts.set(owner.key, verdict);
      }
      return verdict;
    };
  }

  /**
   * The owners (by uid) whose work in `target` shows a bucket user was made: an access Job of theirs
   * (the kind's superseded work), or an object the operator undoes through the store (a SeaweedFS
   * identity). Undefined when a list fails, or the kind has no such sign: then any owner may have one.
   */
  private async ownersWithUsers(target: Target, signal?: AbortSignal): Promise<Set<string> | undefined> {
    const { superseded, undoneThroughTarget = [] } = this.o.kind;
    const signs = [...(superseded ? [superseded] : []), ...undoneThroughTarget.map((type) => ({ type, matches: () => true }))];
    if (!signs.length) return undefined;
    const owners = new Set<string>();
    for (const { type, matches } of signs) {
      const listed = await target.client
        .list<TargetObject>(type, { labelSelector: this.o.marks.selector, signal })
        .then((l) => l.items)
        .catch(() => undefined);
      if (!listed) return undefined;
      for (const o of listed) {
        const owner = this.o.marks.provenOwner(type, o);
        if (owner && matches(o.metadata.labels ?? {})) owners.add(owner.uid);
      }
    }
    return owners;
  }

  /** The objects of `type` in `target` that carry our marks; undefined when they cannot be listed. */
  private async listMarked(target: Target, type: ResourceType, signal?: AbortSignal): Promise<TargetObject[] | undefined> {
    try {
      // Live on purpose: the sweep is the periodic check of the target against what the caches believe.
      return (await target.client.list<TargetObject>(type, { labelSelector: this.o.marks.selector, signal })).items;
    } catch (err) {
      // A companion's type the target does not serve (an exposure's CRD not installed): none of it is there.
      if (isNotFound(err) && type !== this.o.kind.target) return [];
      this.o.log.debug('cannot list for leaks', { kind: type.kind, error: (err as Error).message });
      return undefined;
    }
  }

  /** Judges one marked object: a leak is deleted (or only reported) and its report returned; anything else is left alone. */
  private async judge(
    target: Target,
    type: ResourceType,
    obj: TargetObject,
    pass: Pass,
  ): Promise<{ report: LeakReport; owner: OwnerKey; keptForContents: boolean } | undefined> {
    const owner = this.o.marks.claimedOwner(obj);
    if (!owner || owner.resource !== this.o.kind.resource) return undefined;
    // A store of this owner this sweep does not delete keeps what it needs (its root keys): one going
    // already, too young to judge, or kept for any reason below. Counted for every such store: another
    // of the same owner deleted does not undo it.
    const notJudged = (): undefined => {
      if (type === this.o.kind.target) pass.keptObjects.add(owner.key);
      return undefined;
    };
    if (obj.metadata.deletionTimestamp) return notJudged();
    if (!this.watches(owner.namespace) || this.o.marks.keptOnRelease(obj)) return undefined;
    // Within its grace period (a create in flight), or of an age nothing says: not judged.
    const age = pass.now - Date.parse(obj.metadata.creationTimestamp ?? '');
    if (!(age >= this.o.graceMs)) return notJudged();
    let gone: boolean;
    try {
      gone = await pass.ownerGone(owner);
    } catch (err) {
      this.o.log.debug('cannot read the owner of a target object; not judging it', {
        owner: owner.key,
        error: (err as Error).message,
      });
      return notJudged();
    }
    if (!gone) {
      pass.alive(owner);
      return undefined;
    }
    const goneSince = pass.goneBefore(owner);
    const report: LeakReport = {
      target: target.server,
      kind: type.kind,
      namespace: obj.metadata.namespace,
      name: obj.metadata.name,
      owner: owner.key,
      deleted: false,
    };
    let keptForContents = false;
    // Labels anyone may copy: only our signature makes a leak ours to delete, and only on the object we made.
    const remade = this.o.marks.remade(type, obj, this.o.clockSkewMs ?? CLOCK_SKEW_MS);
    if (!this.o.marks.provenOwner(type, obj)) {
      report.kept =
        'its ownership marks carry no valid signature (written before marks were signed, or not by provider-rook); delete it by hand if it is yours';
      report.unproven = true;
    } else if (remade) {
      report.kept = remade;
      report.unproven = true;
    } else if (this.o.reportOnly) report.kept = 'leak mode is report';
    else if (type === this.o.kind.target && this.o.kind.teardown && (!pass.withUsers || pass.withUsers.has(owner.uid))) {
      // As its resource's deletion would: revoke its users, and keep a bucket that holds objects. That
      // teardown needs the resource; without it, the data is kept.
      report.kept =
        "its deletion runs a teardown first (its bucket users revoked, a bucket that holds objects kept), which only its managed resource's deletion runs; delete it by hand once nothing needs it";
    } else if (goneSince === undefined || pass.now - goneSince < this.o.graceMs - SWEEP_SLACK_MS) {
      // Gone for too short a time to tell from a restore under way: judged again by a later sweep.
      return notJudged();
    } else if (type !== this.o.kind.target && type !== Namespaces && pass.keptObjects.has(owner.key)) {
      // A store kept (a copy, unproven, or its deletion failed) keeps what it needs, such as its root keys.
      report.kept = `kept with the ${this.o.kind.target.kind} of the same owner, which this sweep did not delete`;
    } else if (!(await pass.stillGone(owner).catch(() => false))) {
      if (pass.signal?.aborted) return undefined; // not read again: judged by the next sweep
      pass.alive(owner);
      report.kept = 'its owner exists again (restored while this sweep ran)';
    } else {
      try {
        const removed = await this.remove(target.client, type, obj, pass.signal);
        if (pass.signal?.aborted) return undefined; // cut off in the middle (a namespace's contents half listed): judged next time
        // Gone already, or another's of the same name since: nothing was deleted, and nothing is said.
        if (removed?.notThere) return undefined;
        report.kept = removed?.why;
        // Kept for what a list of every namespaced type found there (not for a list that failed).
        keptForContents = removed?.held === true;
      } catch (err) {
        if (pass.signal?.aborted) return undefined; // cut off: judged by the next sweep
        // One object that cannot be deleted (refused, changed meanwhile) stops neither this sweep nor the next.
        report.kept = `its deletion failed: ${(err as Error).message}`;
      }
    }
    report.deleted = report.kept === undefined;
    if (type === this.o.kind.target && !report.deleted) pass.keptObjects.add(owner.key);
    return { report, owner, keptForContents };
  }

  /** Deletes a leaked object; says why it was kept instead, if it was (for a namespace, whether by its stores alone). */
  private async remove(
    client: KubeClient,
    type: ResourceType,
    obj: TargetObject,
    signal?: AbortSignal,
  ): Promise<NamespaceKept | undefined> {
    if (type === Namespaces) return deleteNamespaceIfUnused(client, this.o.marks, obj.metadata, this.o.kind.target, signal);
    if (type === this.o.kind.target) await deleteDependents(client, this.o.kind, obj, signal);
    await client.delete(type, { namespace: obj.metadata.namespace, name: obj.metadata.name }, { uid: obj.metadata.uid, signal });
    if (type === this.o.kind.target) await deleteDependents(client, this.o.kind, obj, signal);
    return undefined;
  }

  private record(report: LeakReport, provider: ReadonlyDeep<Provider>): void {
    const what = `${report.kind} ${report.namespace ? `${report.namespace}/` : ''}${report.name}`;
    const why = `its owner ${this.o.managedType.kind} ${report.owner} no longer exists`;
    if (report.deleted) {
      this.o.log.info('deleted leaked object', { ...report });
      this.o.recorder.normal(provider, Reasons.DeletedLeakedObject, `deleted ${what} in the target cluster: ${why}`);
    } else {
      this.o.log.info('found leaked object', { ...report });
      this.o.recorder.normal(
        provider,
        Reasons.FoundLeakedObject,
        `found ${what} in the target cluster (${why}); not deleted: ${report.kept}`,
      );
    }
  }
}
