// Delete, the last phase of a pass (pass.ts): a shared store waits for what lives in it
// (store-users.ts); then the kind's teardown in the target (revoking a bucket user), then what the
// resource owns there: only what its marks prove ours, and only the
// very copy that was checked (each delete is conditional on its uid and resourceVersion), in an
// order that a crash at any point leaves nothing behind that the next pass would not find. What a
// teardown must keep on purpose is kept; with retainWhenKept the target object and its companions
// are kept too, their marks now saying Retain so that no leak sweep takes them (keep.ts).
// One file past 400 lines on purpose: a deletion's safety is its order (what waits for what, what
// goes first, what a crash at any point leaves for the next pass to find), read top to bottom here.
import { ReasonedError } from '../../kit/conditions.ts';
import type { Deletion, Client } from '../../kit/kube/client.ts';
import { isConflict } from '../../kit/kube/errors.ts';
import { describeRef, refKey, type ObjectRef } from '../../kit/kube/resources.ts';
import type { ExternalDeletion, ManagedResource } from '../managed/types.ts';
import type { Companion, NativeKind, TargetObject, Teardown } from './kind.ts';
import { deleteNamespaceIfUnusedCoalesced, type NamespaceKept } from './namespaces.ts';
import { LABEL_OWNER_UID, type Owner, type Relation, type Vouchers } from '../ownership/marks.ts';
import { Reasons } from '../reasons.ts';
import { storeInUse } from './store-users.ts';
import { ownedCompanions, retain } from './keep.ts';
import type { NativePass, TargetAccess } from './pass.ts';

/**
 * The resource's record that its kind's teardown is needed (Teardown.onlyAfter was seen reached). An
 * annotation, not status: a resource restored from a backup keeps it, and it never goes away.
 */
export const ANNOTATION_TEARDOWN = 'rook.crossplane.io/teardown';
export const TEARDOWN_REQUIRED = 'required';

/**
 * The teardown's `onlyAfter` while the resource has not recorded it reached. None where it names the
 * teardown's own object (a SeaweedFS Bucket, never made for a teardown): nothing is recorded of that.
 */
export function unrecordedOnlyAfter(mr: ManagedResource, teardown: Teardown | undefined): Teardown['onlyAfter'] {
  const after = teardown?.onlyAfter;
  if (!after || refKey(after.ref) === refKey(teardown.object)) return undefined;
  return mr.metadata.annotations?.[ANNOTATION_TEARDOWN] === TEARDOWN_REQUIRED ? undefined : after;
}

/** Whether the kind's superseded companions (an old access Job) are of the type that can show `after` reached. */
export function supersededMayShow(
  superseded: NativeKind<ManagedResource>['superseded'],
  after: Teardown['onlyAfter'],
): after is NonNullable<Teardown['onlyAfter']> {
  const work = superseded?.type;
  return !!after && work?.apiVersion === after.ref.type.apiVersion && work.kind === after.ref.type.kind;
}

/** The finalizers of a deletion's propagation policy: our background DELETE replaces them. */
const PROPAGATION = new Set(['orphan', 'foregroundDeletion']);

/** Deletes what the resource of this pass owns in the target, once its kind's teardown is done. */
export async function remove<MR extends ManagedResource>(pass: NativePass<MR>): Promise<ExternalDeletion> {
  const ctx = pass.recorded();
  const target = pass.target(ctx);
  // A store that something lives in waits for it: nothing of the store is touched until it is gone.
  const waiting = await storeInUse(pass, target);
  if (waiting) return { gone: false, requested: false, waiting };
  // The kind's work in the target first (revoking a user): until it is done, nothing is deleted.
  const teardown = pass.kind.teardown?.(pass.mr, pass.name, ctx);
  const torn = teardown ? await tearDown(pass, target, teardown) : 'done';
  if (torn === 'pending') return { gone: false, requested: false };
  // With those of keys past their grace period not removed yet (Rotation.retiredBy).
  const companions = ownedCompanions(pass, ctx, teardown);
  if (torn === 'retain') {
    // The store and its data are kept, marked Retain; what grants access to them goes.
    const main = await retain(
      pass,
      target,
      companions.filter((c) => !c.grantsAccess),
    );
    const { owner } = pass;
    await Promise.all(
      companions
        .filter((c) => c.grantsAccess)
        .map((c) => deleteIfOurs(pass, c, { owner, vouchers: pass.ownership.companionVouchersFor(c, main) })),
    );
    return { gone: true, requested: false };
  }
  const { gone, requested, keptNamespace, waiting: onOperator } = await deleteOwned(pass, target, companions);
  // Other stores still living there is the usual case of a shared namespace, not news.
  if (keptNamespace && !keptNamespace.byStores && !keptNamespace.notThere)
    pass.opts.recorder?.normal(pass.mr, Reasons.KeptTargetNamespace, keptNamespace.why);
  return { gone, ...(requested ? {} : { requested }), ...(onOperator && { waiting: onOperator }) };
}

/**
 * Deletes the object if it carries our marks, proven by the copy we checked: the delete is
 * conditional on its uid and resourceVersion, so a cached copy proves as much as a fresh read.
 * A conflict (it changed since) is checked once more against the server. `before` runs on the
 * copy just before its delete; the copy is returned even if a retry finds the object gone.
 */
export async function deleteIfOurs(
  { client, read, marks, signal }: TargetAccess,
  ref: ObjectRef,
  proof: {
    owner: Owner;
    vouchers: Vouchers;
    before?: (observed: TargetObject) => Promise<void>;
    /** What the caller judged of the object: a copy of which it does not hold (one since replaced) is kept. */
    only?: (observed: TargetObject) => boolean;
  },
): Promise<{ outcome: Deletion | 'notOurs' | 'kept'; observed?: TargetObject; relation?: Relation; alreadyDeleting?: boolean }> {
  let seen: TargetObject | undefined;
  for (let attempt = 0; ; attempt++) {
    const observed = await (attempt === 0 ? read : client).get<TargetObject>(
      ref.type,
      { namespace: ref.namespace, name: ref.name },
      signal,
    );
    if (!observed) return { outcome: 'absent', observed: seen };
    const relation = marks.relation(ref.type, observed, proof.owner, proof.vouchers);
    if (relation !== 'ours' && relation !== 'restored') return { outcome: 'notOurs' };
    if (proof.only && !proof.only(observed)) return { outcome: 'kept', observed, relation };
    // Held by others' finalizers: a DELETE again would change nothing but cost a write. Only a fresh
    // copy says so (a cached one may be of an object since replaced); one held for its dependents'
    // sake (orphan, foreground) is asked again, in the background, as before.
    const held = observed.metadata.deletionTimestamp && !observed.metadata.finalizers?.some((f) => PROPAGATION.has(f));
    if (held && attempt === 0 && read !== client) continue;
    seen = observed;
    await proof.before?.(observed);
    if (held) return { outcome: 'pending', observed, relation, alreadyDeleting: true };
    try {
      const outcome = await client.delete(
        ref.type,
        { namespace: ref.namespace, name: ref.name },
        {
          uid: observed.metadata.uid,
          resourceVersion: observed.metadata.resourceVersion,
          signal,
        },
      );
      return { outcome, observed, relation };
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Not a stale copy of the managed resource (which the reconciler retries quietly): say so.
      if (attempt > 0)
        throw new ReasonedError(
          Reasons.TargetObjectChanging,
          `${describeRef(ref)} in the target cluster changed while it was being deleted; retrying`,
        );
    }
  }
}

/** Deletes what the operator made for `target` (proven by the ownerReference's uid). */
export async function deleteDependents(
  client: Client,
  kind: Pick<NativeKind<ManagedResource>, 'dependents'>,
  target: TargetObject,
  signal?: AbortSignal,
): Promise<void> {
  // All at once: the order among them does not matter, and a deletion's time is a chain of round trips.
  await Promise.all(
    (kind.dependents ?? []).map(async (dep) => {
      const { items } = await client.list<TargetObject>(dep.type, {
        namespace: target.metadata.namespace,
        labelSelector: dep.labelSelector(target),
        signal,
      });
      await Promise.all(
        items
          .filter((item) => !item.metadata.deletionTimestamp && item.metadata.ownerReferences?.some((r) => r.uid === target.metadata.uid))
          .map((item) =>
            client.delete(dep.type, { namespace: item.metadata.namespace, name: item.metadata.name }, { uid: item.metadata.uid, signal }),
          ),
      );
    }),
  );
}

/**
 * Companions an earlier spec or key generation wanted (an old access Job, a finished retire Job):
 * ours, of the kind's `superseded` type and labels, in the namespaces of `wanted`, and not in
 * `wanted`. Deleted, so none piles up, keeps a namespace alive, or runs again with old keys.
 */
export async function deleteSuperseded<MR extends ManagedResource>(
  pass: NativePass<MR>,
  vouchers: Vouchers,
  {
    wanted,
    namespaces,
    keep,
  }: {
    wanted: ObjectRef[];
    namespaces: (string | undefined)[];
    /** Kept even so (a completed access Job, until the resource records what it proves). */
    keep?: (observed: TargetObject) => boolean;
  },
): Promise<void> {
  const s = pass.kind.superseded;
  if (!s) return;
  const wantedKeys = new Set(wanted.map(refKey));
  const { owner, client, marks, signal } = pass;
  for (const namespace of new Set(namespaces.filter((n): n is string => Boolean(n)))) {
    const { items } = await client.list<TargetObject>(s.type, {
      namespace,
      labelSelector: `${marks.selectorFor(owner)},${s.labelSelector}`,
      signal,
    });
    for (const item of items) {
      const ref = { type: s.type, name: item.metadata.name, namespace };
      if (!wantedKeys.has(refKey(ref)) && !item.metadata.deletionTimestamp)
        await deleteIfOurs(pass.live(), ref, { owner, vouchers, ...(keep ? { only: (o: TargetObject) => !keep(o) } : {}) });
    }
  }
}

/**
 * The kind's retired companions (NativeKind.retired) the companion watch shows still there for this
 * resource: no request at rest. Where a type's watch is not synced, `unknown` says whether its refs
 * count (a write reads them; observing does not call it drift).
 */
export function retiredLeft<MR extends ManagedResource>(pass: NativePass<MR>, unknown: boolean): ObjectRef[] {
  const { kind, mr, name, read, marks, owner } = pass;
  return (kind.retired?.(mr, name) ?? []).filter((ref) => {
    const cached = read.cached?.<TargetObject>(ref.type, marks.selector);
    if (!cached) return unknown;
    return cached.some(
      (o) =>
        o.metadata.name === ref.name &&
        o.metadata.namespace === ref.namespace &&
        !o.metadata.deletionTimestamp &&
        o.metadata.labels?.[LABEL_OWNER_UID] === owner.uid,
    );
  });
}

/**
 * Whether a deleting resource whose object is gone may still have something of ours in the target,
 * so that its deletion runs once more (it then finds the object absent, deletes what is left, and
 * lets go): what the operator made, found by the recorded uid; our companions, a teardown's Job or
 * older Jobs. A pass cut off after the object, or an object someone else deleted, leaves them behind
 * otherwise. (A status cannot tell that a pass got past them: a running teardown writes the same.)
 */
/** Whether the resource's teardown runs on its record alone (NativeKind's Teardown.runsWithoutTarget), whatever its object is now. */
export function tearsDownWithoutTarget<MR extends ManagedResource>(pass: NativePass<MR>): boolean {
  return Boolean(pass.vouchers.recordedUid && pass.kind.teardown?.(pass.mr, pass.name, pass.recorded())?.runsWithoutTarget);
}

export function mayHaveLeftovers(
  kind: Pick<NativeKind<ManagedResource>, 'dependents' | 'companions' | 'teardown' | 'superseded'>,
  recordedUid: string | undefined,
): boolean {
  return Boolean((kind.dependents && recordedUid) || kind.companions || kind.teardown || kind.superseded);
}

/**
 * Deletes a resource's object in the target, what its operator made for it, its companions, and
 * its namespace once nothing else is there. Says whether the object is gone, and why a namespace
 * of ours was kept.
 */
async function deleteOwned<MR extends ManagedResource>(
  pass: NativePass<MR>,
  ref: ObjectRef,
  companions: Companion[],
): Promise<{ gone: boolean; requested: boolean; keptNamespace?: NamespaceKept; waiting?: ExternalDeletion['waiting'] }> {
  const { kind, client, owner, vouchers, signal } = pass;
  const first = await deleteUndoneThroughTarget(pass, ref, companions);
  if (first.left) return { gone: false, requested: false, ...(first.held.length && operatorWait(pass.mr, first.held, ref)) };
  // What the operator made for the object is found by its uid. With the uid recorded, the object goes
  // first and they go after it, once: should this pass fail in between, the next one finds them by
  // the recorded uid. Without it, they go before the object too, or nothing would find them later.
  const recorded = kind.dependents && vouchers.recordedUid;
  const target = await deleteIfOurs(pass, ref, {
    owner,
    vouchers,
    before: (observed) => (recorded ? Promise.resolve() : deleteDependents(client, kind, observed, signal)),
  });
  // After the object, side by side (their order does not matter; a deletion's time is a chain of
  // round trips): what the operator made, which it may have made in the meantime; our companions;
  // older companions of the superseded type (an access Job of keys or a bucket the resource no
  // longer has), in every namespace a companion lives in.
  const madeFor =
    target.observed ??
    (recorded && target.outcome === 'absent'
      ? {
          apiVersion: kind.target.apiVersion,
          kind: kind.target.kind,
          metadata: { name: ref.name, namespace: ref.namespace, uid: recorded },
        }
      : undefined);
  const companionVouchers = pass.ownership.companionVouchers(target.relation);
  const namespaces = companions.map((c) => c.namespace);
  // A teardown run whatever its target is (tearsDownWithoutTarget) keeps its object while the target
  // waits (another's finalizer on it): that object is what says the teardown ran.
  const teardown = tearsDownWithoutTarget(pass) && target.outcome === 'pending' && kind.teardown?.(pass.mr, pass.name, pass.recorded());
  const going = teardown ? companions.filter((c) => refKey(c) !== refKey(teardown.object)) : companions;
  const [, ...companionOutcomes] = await Promise.all([
    madeFor && deleteDependents(client, kind, madeFor, signal),
    ...going.map((c) => deleteIfOurs(pass, c, { owner, vouchers: pass.ownership.companionVouchersFor(c, target.relation) })),
    ...retiredLeft(pass, true).map((ref) => deleteIfOurs(pass, ref, { owner, vouchers: companionVouchers })),
    deleteSuperseded(pass, companionVouchers, { wanted: [], namespaces }),
  ]);
  const undoing = await undoneThroughPending(pass, going, companionOutcomes.slice(0, going.length) as { outcome: string }[]);
  const keptNamespace = ref.namespace
    ? await deleteNamespaceIfUnusedCoalesced(client, pass.marks, ref.namespace, kind.target, signal)
    : undefined;
  // Asked now: not absent (gone already, or deleted by someone else), nor held since an earlier pass.
  const requested = (target.outcome === 'deleted' || target.outcome === 'pending') && !target.alreadyDeleting;
  const gone = target.outcome !== 'pending' && !undoing;
  return { gone, requested, keptNamespace, ...(undoing && operatorWait(pass.mr, undoing.held, undoing.through)) };
}

/**
 * How long an operator usually takes to undo what its finalizers hold: a deletion waiting longer says
 * so (WaitingForOperator), naming what it waits for. It goes on waiting: those finalizers are not ours
 * to remove, and without them the operator's work in the store (a user, a bucket) would be left undone.
 */
export const OPERATOR_UNDO_PATIENCE_MS = 60_000;
/** While it waits past that, it looks again this often besides the watches (the server object's deletion is not watched). */
const OPERATOR_WAIT_RECHECK_MS = 30_000;

/** The deletion's wait for its operator, once it has lasted past OPERATOR_UNDO_PATIENCE_MS; nothing before. */
function operatorWait(mr: ManagedResource, held: ObjectRef[], through: ObjectRef): Pick<ExternalDeletion, 'waiting'> {
  const since = mr.metadata.deletionTimestamp;
  if (!since || Date.now() - Date.parse(since) < OPERATOR_UNDO_PATIENCE_MS) return {};
  const objects = held.map(describeRef).join(', ');
  return {
    waiting: {
      reason: Reasons.WaitingForOperator,
      message:
        `waiting since ${since} for the operator to undo ${objects} (its finalizers hold them) through ` +
        `${describeRef(through)}; provider-rook does not remove finalizers it does not own`,
      recheckAfterMs: OPERATOR_WAIT_RECHECK_MS,
    },
  };
}

/**
 * Whether a companion the operator undoes through another object it serves (NativeKind.undoneThrough)
 * is still being undone: its deletion pending (the operator's finalizer), while that object is
 * there (read live: without it, the operator undoes nothing, and waiting would never end).
 */
async function undoneThroughPending<MR extends ManagedResource>(
  pass: NativePass<MR>,
  companions: Companion[],
  outcomes: { outcome: string }[],
): Promise<{ held: ObjectRef[]; through: ObjectRef } | undefined> {
  const through = pass.kind.undoneThrough;
  if (!through) return undefined;
  const held = companions.filter(
    (c, i) => outcomes[i]?.outcome === 'pending' && through.types.some((t) => t.apiVersion === c.type.apiVersion && t.kind === c.type.kind),
  );
  if (!held.length) return undefined;
  const ref = through.ref(pass.mr, pass.name);
  const there = await pass.client.get<TargetObject>(ref.type, { namespace: ref.namespace, name: ref.name }, pass.signal);
  return there ? { held, through: ref } : undefined;
}

/**
 * Writes what the teardown's object must say before its outcome counts, or before it is deleted
 * (Teardown.prepare), where it is ours and does not say it yet: whether it wrote. Conditional on the
 * copy read.
 */
async function prepareIfOurs<MR extends ManagedResource>(
  pass: NativePass<MR>,
  teardown: Teardown,
  main: Relation | undefined,
  have?: TargetObject,
): Promise<boolean> {
  if (!teardown.prepare) return false;
  const { object } = teardown;
  const found = have ?? (await pass.client.get<TargetObject>(object.type, { namespace: object.namespace, name: object.name }, pass.signal));
  if (!found || found.metadata.deletionTimestamp) return false;
  const relation = pass.ownership.relationOf(object.type, found, pass.ownership.companionVouchersFor(object, main));
  const patch = relation === 'ours' || relation === 'restored' ? teardown.prepare(found) : undefined;
  if (!patch) return false;
  const { uid, resourceVersion } = found.metadata;
  await pass.client.mergePatch(
    object.type,
    { namespace: object.namespace, name: object.name },
    { ...patch, metadata: { uid, resourceVersion } },
    pass.signal,
  );
  return true;
}

/**
 * The companions the operator undoes through the target object (NativeKind.undoneThroughTarget):
 * whether any is left, which the target object waits for (deleted in this pass, or going), and those
 * the operator's finalizers still hold.
 */
async function deleteUndoneThroughTarget<MR extends ManagedResource>(
  pass: NativePass<MR>,
  ref: ObjectRef,
  companions: Companion[],
): Promise<{ left: boolean; held: ObjectRef[] }> {
  const none = { left: false, held: [] };
  const types = pass.kind.undoneThroughTarget ?? [];
  const first = companions.filter((c) => types.some((t) => t.apiVersion === c.type.apiVersion && t.kind === c.type.kind));
  if (!first.length) return none;
  // Read live: with the target gone, the operator can undo nothing of them, and waiting would never end.
  const observed = await pass.client.get<TargetObject>(ref.type, { namespace: ref.namespace, name: ref.name }, pass.signal);
  if (!observed) return none;
  const main = pass.ownership.relationOf(ref.type, observed);
  const outcomes = await Promise.all(
    first.map((c) => deleteIfOurs(pass.live(), c, { owner: pass.owner, vouchers: pass.ownership.companionVouchersFor(c, main) })),
  );
  const held = first.filter((_, i) => outcomes[i]?.outcome === 'pending');
  return { left: held.length > 0 || outcomes.some((o) => o.outcome === 'deleted'), held };
}

/**
 * The kind's teardown (kind.ts, Teardown): runs only while the target object is proven ours.
 * 'pending' while it runs (its object's changes bring the resource back); 'retain' when it kept the
 * target object's contents.
 */
async function tearDown<MR extends ManagedResource>(
  pass: NativePass<MR>,
  target: ObjectRef,
  teardown: Teardown,
): Promise<'pending' | 'done' | 'retain'> {
  const { client, signal } = pass;
  const observed = await pass.read.get<TargetObject>(target.type, { namespace: target.namespace, name: target.name }, signal);
  const relation = observed && pass.ownership.relationOf(target.type, observed);
  const ours = observed && (relation === 'ours' || relation === 'restored') && !observed.metadata.deletionTimestamp;
  // Nothing of ours there: nothing to tear down (its deletion asked already, the teardown ran before),
  // but where the teardown's work is elsewhere (a user in a shared store) and the object was made:
  // there its own object says whether it ran, and is kept until the target is gone (deleteOwned).
  // What the teardown's object must say before it goes is written all the same (a bucket kept, Retain).
  if (!ours && !tearsDownWithoutTarget(pass)) return (await prepareIfOurs(pass, teardown, relation || undefined)) ? 'pending' : 'done';
  const { object, onlyAfter } = teardown;
  const have = await client.get<TargetObject>(object.type, { namespace: object.namespace, name: object.name }, signal);
  // Needed only once onlyAfter was reached: as the resource recorded, or else as its object shows now.
  const unproven = onlyAfter && (refKey(onlyAfter.ref) === refKey(object) || unrecordedOnlyAfter(pass.mr, teardown));
  if (!have && unproven) {
    const { ref, reached } = onlyAfter;
    const before = await client.get<TargetObject>(ref.type, { namespace: ref.namespace, name: ref.name }, signal);
    if (!before || !reached(before)) return 'done';
  }
  // Nothing proves the store gone (its root keys may come back, a namespace be allowed again): it waits, saying why.
  const cannot = !have && (await whyNotMade(pass, teardown));
  if (cannot)
    return cannotRun(pass, target, { teardown, why: cannot, remedy: pass.opts.makesNothing ? 'allow that namespace again' : 'restore it' });
  if (!have) {
    // Run on its record alone: only for a resource still held (not a pass from a cache behind a deletion that ended).
    if (!ours && pass.opts.stillHeld && !(await pass.opts.stillHeld(pass.mr, signal))) return 'done';
    await client.create(object.type, pass.ownership.made(object), signal);
    return 'pending';
  }
  pass.ownership.trusted(object, have, observed, relation || undefined);
  if (await prepareIfOurs(pass, teardown, relation, have)) return 'pending';
  const outcome = teardown.outcome(have);
  if ('failed' in outcome) {
    throw new ReasonedError(
      Reasons.TeardownFailed,
      `the ${object.purpose} ${describeRef(object)} failed: ${outcome.failed}. Nothing else was deleted; delete that object to run it again, or set reclaimPolicy Retain to keep everything`,
    );
  }
  if (!outcome.done) return 'pending';
  if (!outcome.kept) return 'done';
  pass.warn(
    Reasons.KeptInTarget,
    teardown.retainWhenKept
      ? `${outcome.kept}. ${describeRef(target)} and what goes with it were kept too, marked Retain; delete them by hand when done`
      : outcome.kept,
  );
  return teardown.retainWhenKept ? 'retain' : 'done';
}

/**
 * A teardown under way when the resource's policy changed to keep everything (Retain mid-deletion):
 * its work is stopped (its object deleted, which takes its pods), or it would go on removing the
 * user, and with deleteObjects the bucket's objects, after it was asked to keep them. Before keep().
 */
export async function stopTeardown<MR extends ManagedResource>(pass: NativePass<MR>): Promise<void> {
  const ctx = pass.recorded();
  const teardown = pass.kind.teardown?.(pass.mr, pass.name, ctx);
  if (!teardown) return;
  const { client, signal } = pass;
  const { object } = teardown;
  const have = await client.get<TargetObject>(object.type, { namespace: object.namespace, name: object.name }, signal);
  if (!have || have.metadata.deletionTimestamp) return;
  const outcome = teardown.outcome(have);
  if (!('done' in outcome) || outcome.done) return; // finished, or failed: nothing of it runs any more
  const target = pass.target(ctx);
  const observed = await client.get<TargetObject>(target.type, { namespace: target.namespace, name: target.name }, signal);
  const main = (observed && pass.ownership.relationOf(target.type, observed)) || undefined;
  const stopped = await deleteIfOurs(pass, object, { owner: pass.owner, vouchers: pass.ownership.companionVouchersFor(object, main) });
  if (stopped.outcome === 'deleted' || stopped.outcome === 'pending')
    pass.warn(
      Reasons.KeptInTarget,
      `${describeRef(object)} (the ${object.purpose}) was under way and is stopped: reclaim policy ${pass.owner.reclaimPolicy} keeps what is left (what it removed already is gone)`,
    );
}

/** Why the teardown's object cannot be made: nothing may be made there, or what it needs is gone. */
async function whyNotMade<MR extends ManagedResource>(
  pass: NativePass<MR>,
  { object, requires = [] }: Teardown,
): Promise<string | undefined> {
  if (pass.opts.makesNothing) return `the ${object.purpose} cannot be made: ${pass.opts.makesNothing}`;
  const missing = await firstMissing(pass, requires);
  return missing && `the ${object.purpose} cannot run: the ${missing.purpose} ${describeRef(missing)} is gone`;
}

/** What it needs is gone: nothing is deleted (or, with retainWhenKept, everything is kept), and it says why. */
function cannotRun<MR extends ManagedResource>(
  pass: NativePass<MR>,
  target: ObjectRef,
  { teardown, why, remedy = 'restore it' }: { teardown: Teardown; why: string; remedy?: string },
): 'retain' {
  if (!teardown.retainWhenKept) {
    throw new ReasonedError(
      Reasons.TeardownFailed,
      `${why}. Nothing was deleted; ${remedy}, or set reclaimPolicy Retain to keep everything`,
    );
  }
  pass.warn(
    Reasons.KeptInTarget,
    `${why}, so nothing proves its bucket empty: ${describeRef(target)} and what goes with it were kept, marked Retain; delete them by hand when done`,
  );
  return 'retain';
}

async function firstMissing<R extends ObjectRef>({ client, signal }: TargetAccess, refs: R[]): Promise<R | undefined> {
  for (const ref of refs) if (!(await client.get(ref.type, { namespace: ref.namespace, name: ref.name }, signal))) return ref;
  return undefined;
}
