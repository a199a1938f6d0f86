// Apply, the phase of a pass (pass.ts) that writes: makes or repairs the target object and its
// companions. A resource's first create, where nothing of it exists yet, goes straight to creates
// (which never write over anything) without a read before each; every other write first reads and
// checks the object and every companion, so no store is ever made that names someone else's
// Secret, and nothing unproven is ever written over. They are read from the watch caches, and each
// write is conditional on the copy it checked (uid and resourceVersion), as deletes are: a copy
// that is stale is refused by the server, and everything is read again from it.
import { ReasonedError } from '../../kit/conditions.ts';
import { KubeError, isAlreadyExists, isConflict, isNotFound } from '../../kit/kube/errors.ts';
import { refKey } from '../../kit/kube/resources.ts';
import { RecordedError, type ExternalCreation, type ManagedResource } from '../managed/types.ts';
import { ANNOTATION_TARGET_UID, companionEntry } from '../ownership/marks.ts';
import { deleteIfOurs, deleteSuperseded, retiredLeft, supersededMayShow, unrecordedOnlyAfter } from './delete.ts';
import type { Companion, KindContext, ObjectReader, TargetObject } from './kind.ts';
import { ensureNamespace, forgetNamespace } from './namespaces.ts';
import { Reasons } from '../reasons.ts';
import type { NativePass } from './pass.ts';
import { retiredBy, retireWork } from './rotation.ts';

/**
 * Makes the object and its companions for the first time (`creating`) or repairs them. What the
 * resource is to record comes back: the object's uid after a create, and each recordable companion
 * made or changed; on a failure, those made before it ride with the error.
 */
export async function apply<MR extends ManagedResource>(pass: NativePass<MR>, creating: boolean): Promise<ExternalCreation> {
  const made: Record<string, string> = {};
  let object: TargetObject;
  try {
    object = await write(pass, creating, made);
  } catch (err) {
    // What was made before a later step failed is recorded all the same (its record may name ones since lost).
    throw Object.keys(made).length ? new RecordedError(err, pass.ownership.companionRecord(made)) : err;
  }
  // Recorded with the create's outcome, in the same write: what a restore of this resource proves
  // its object by, and what proves the Service its endpoint names.
  const uid: Record<string, string> = creating && object.metadata.uid ? { [ANNOTATION_TARGET_UID]: object.metadata.uid } : {};
  // Retired companions are gone from the target now (or were never ours): gone from the record too.
  const retired = creating ? [] : (pass.kind.retired?.(pass.mr, pass.name) ?? []);
  const annotations = { ...uid, ...pass.ownership.companionRecord(made, retired) };
  return Object.keys(annotations).length ? { annotations } : {};
}

/** Makes or repairs the object and its companions; `made` gets the uid of each recordable companion it made or changed. */
async function write<MR extends ManagedResource>(
  pass: NativePass<MR>,
  creating: boolean,
  made: Record<string, string>,
): Promise<TargetObject> {
  const { kind, client, mr, name, owner, vouchers, signal } = pass;
  const record = (c: Companion, obj: TargetObject): void => {
    // With when it was made, as a create's answer says: what tells a later one of ours from a copy of it.
    if (pass.ownership.recordable(c) && obj.metadata.uid) made[refKey(c)] = companionEntry(obj);
  };
  const type = kind.target;
  const ctx = pass.recorded();
  const desired = pass.ownership.marked(type, kind.desired(mr, name, ctx));
  await pass.opts.prerequisite?.(signal);
  const namespace = type.namespaced ? desired.metadata.namespace : undefined;
  if (namespace) await ensureNamespace(pass, namespace, { owner, vouchers });
  // With the work removing keys whose grace period ended, when there is such work.
  const retire = retireWork(kind, mr, name, ctx);
  const companions = [...pass.companions(ctx), ...(retire ? [retire.object] : [])];
  if (creating && !vouchers.recordedUid && !vouchers.legacy && !retire) {
    const fresh = await createFresh(pass, desired, { companions, made: record });
    if (fresh) return fresh;
    // Something was in the way (checked below), or the namespace was gone (made again here).
    if (namespace) await ensureNamespace(pass, namespace, { owner, vouchers });
  }
  // From the caches first (a drift the watch just brought is there already), then, should anything
  // have changed since, from the server: either way every write is conditional on the copy checked.
  const plan = { creating, ctx, desired, companions, retire, record };
  try {
    return await repair(pass, plan, pass.read);
  } catch (err) {
    // Changed, made or deleted since the cache saw it (a merge patch of a deleted object is NotFound).
    if (pass.read === client || !(isConflict(err) || isAlreadyExists(err) || isNotFound(err))) throw err;
  }
  return repair(pass, plan, client);
}

/** What one attempt at a repair works from: built once, read afresh at each attempt. */
interface RepairPlan {
  creating: boolean;
  ctx: KindContext;
  desired: TargetObject;
  companions: Companion[];
  retire: ReturnType<typeof retireWork>;
  record: (c: Companion, obj: TargetObject) => void;
}

/**
 * Reads the object and its companions from `read`, checks them all, then repairs. Each write names
 * the uid of the copy it checked, and, when that copy came from a cache, its resourceVersion too:
 * the server refuses it (Conflict) rather than write over anything that changed since.
 */
async function repair<MR extends ManagedResource>(
  pass: NativePass<MR>,
  { creating, ctx, desired, companions, retire, record }: RepairPlan,
  read: ObjectReader,
): Promise<TargetObject> {
  const { kind, client, mr, name, owner, signal } = pass;
  const type = kind.target;
  const precondition = ({ metadata }: TargetObject): { uid?: string; resourceVersion?: string } =>
    read === client ? { uid: metadata.uid } : { uid: metadata.uid, resourceVersion: metadata.resourceVersion };
  // The object and every companion are read together, and all checked before anything is
  // written, so no store is ever made that names someone else's Secret, and nothing unproven is
  // ever written over.
  const [observed, ...found] = await Promise.all([
    read.get<TargetObject>(type, { namespace: desired.metadata.namespace, name }, signal),
    ...companions.map((c) => read.get<TargetObject>(c.type, { namespace: c.namespace, name: c.name }, signal)),
  ]);
  // Gone since it was observed (a repair reads it again): making it is a create's, which marks the
  // create under way and records the new uid. Made here, it would go unrecorded, and no later pass
  // could prove it ours.
  if (!observed && !creating)
    throw new KubeError(409, 'Conflict', `${type.kind} ${name} was deleted since it was observed; it is made again by the next pass`);
  const relation = observed ? pass.ownership.relationOf(type, observed) : undefined;
  if (relation) pass.ownership.refuseForeign(relation, { type, name, namespace: desired.metadata.namespace });
  const verdicts = companions.map((c, i) => (found[i] ? pass.ownership.verdict(c, found[i], observed, relation) : undefined));
  // Companions are proven by their signature: the recorded uid is the target object's, never theirs.
  const companionVouchers = pass.ownership.companionVouchers(relation);
  // Companions there are repaired side by side (each write is conditional on the copy checked),
  // and all of them before a missing one is made: those are made in their order, which a kind may
  // rely on (a Job after the Secret it reads). One already as built is not written again.
  const repairs: Promise<unknown>[] = [];
  const missing: Companion[] = [];
  let retireFailed: string | undefined;
  for (const [i, c] of companions.entries()) {
    const [have, verdict] = [found[i], verdicts[i]];
    // A failed retire is made again (its Job's pod template cannot change): deleted now, made on the
    // next pass. Only that failed Job: conditional on the copy judged, and judged again if it changed.
    const outcome = have && c === retire?.object ? retire.outcome(have) : undefined;
    if (outcome && 'failed' in outcome) {
      const failed = retire!;
      repairs.push(deleteIfOurs(pass, c, { owner, vouchers: companionVouchers, only: (job) => 'failed' in failed.outcome(job) }));
      retireFailed = outcome.failed;
    } else if (!have || !verdict) {
      if (creating || !c.irreplaceable) missing.push(c);
    } else if (verdict.relation === 'unmarked') {
      // Named by an imported object itself: used as it is, never written.
    } else if (!verdict.drift.length) {
      record(c, have);
    } else if (verdict.built) {
      const { built } = verdict;
      // Changed only while it is the very copy just checked.
      repairs.push(
        client.apply(c.type, { ...built, metadata: { ...built.metadata, ...precondition(have) } }, signal).then((o) => record(c, o)),
      );
    } else {
      // Irreplaceable, or work that cannot change: only the marks do (a restored resource's, a legacy one's, a new policy).
      const { labels, annotations } = pass.ownership.marked(c.type, have).metadata;
      // Conditional on the copy just proven: a Secret swapped in between is never signed as ours.
      const { uid, resourceVersion } = have.metadata;
      repairs.push(
        client.mergePatch(
          c.type,
          { namespace: c.namespace, name: c.name },
          { metadata: { uid, resourceVersion, labels, annotations } },
          signal,
        ),
      );
    }
  }
  // With every companion there, the object is written beside their repairs: nothing it names is
  // still to be made. Made with a create, changed only while it is the very copy just checked.
  const writeObject = (): Promise<TargetObject> =>
    observed
      ? client.apply(type, { ...desired, metadata: { ...desired.metadata, ...precondition(observed) } }, signal)
      : client.create(type, pass.marks.stamped(type, desired), signal);
  const object = observed && !missing.length ? writeObject() : undefined;
  if (object) repairs.push(object);
  // Every repair ends before the pass goes on or fails: what was changed is recorded either way.
  const failed = (await Promise.allSettled(repairs)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  // A create, not an apply: should someone make it in between, this fails rather than adopts it.
  for (const c of missing) record(c, await client.create<TargetObject>(c.type, pass.ownership.made(c), signal));
  // Keys past their grace period held by companions: the first of them still there goes (the next, once it is gone).
  const held = retiredBy(kind, mr, name, ctx);
  for (const c of held) {
    const { outcome } = await deleteIfOurs(pass.live(), c, { owner, vouchers: companionVouchers });
    if (outcome !== 'absent') break;
  }
  // What an earlier spec made and this one does not want (an exposure of another kind) goes.
  if (!creating) for (const ref of retiredLeft(pass, true)) await deleteIfOurs(pass.live(), ref, { owner, vouchers: companionVouchers });
  // Nothing is superseded before the first create.
  // A completed access Job proves a user was made: it stays until the resource records that (observe does).
  const after = unrecordedOnlyAfter(mr, kind.teardown?.(mr, name, ctx));
  if (!creating)
    await deleteSuperseded(pass, companionVouchers, {
      wanted: companions,
      namespaces: companions.map((c) => c.namespace),
      ...(supersededMayShow(kind.superseded, after) ? { keep: after.reached } : {}),
    });
  const written = await (object ?? writeObject());
  // Everything else is repaired all the same; the failure is the resource's to say (Synced), once.
  if (retireFailed)
    throw new ReasonedError(
      Reasons.RotationFailed,
      `could not remove the keys of generation ${ctx.credentials.due.join(', ')}, whose grace period ended (they still work): ${retireFailed}. It is made again`,
    );
  return written;
}

/**
 * Creates the companions in order, then the object (marked `desired`); `made` hears of each companion
 * made. Undefined when one is there after all, or its namespace is not: the caller then reads and
 * checks everything before it writes.
 */
async function createFresh<MR extends ManagedResource>(
  pass: NativePass<MR>,
  desired: TargetObject,
  { companions, made }: { companions: Companion[]; made: (c: Companion, obj: TargetObject) => void },
): Promise<TargetObject | undefined> {
  const { client, signal } = pass;
  try {
    for (const c of companions) made(c, await client.create<TargetObject>(c.type, pass.ownership.made(c), signal));
    return await client.create(pass.kind.target, pass.marks.stamped(pass.kind.target, desired), signal);
  } catch (err) {
    const namespace = desired.metadata.namespace;
    if (isNotFound(err) && namespace) forgetNamespace(client, namespace);
    if (isAlreadyExists(err) || isNotFound(err)) return undefined;
    throw err;
  }
}
