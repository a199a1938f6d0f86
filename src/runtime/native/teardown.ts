// A kind's teardown (kind.ts, Teardown): the work done in the target before a resource's objects
// are deleted, such as the Job that revokes a bucket user. It runs only while the target object is
// proven ours; what it must keep on purpose is kept, and with retainWhenKept the target object and
// its companions are kept too, their marks now saying Retain so that no leak sweep takes them.
import { ReasonedError } from '../../kit/conditions.ts';
import type { Client } from '../../kit/kube/client.ts';
import { Reasons } from '../reasons.ts';
import { describeRef, type Companion, type ObjectReader, type ObjectRef, type TargetObject, type Teardown } from './kind.ts';
import type { Owner, OwnershipMarks, Relation, Vouchers } from '../ownership/marks.ts';

export interface TeardownAccess {
  client: Client;
  read: ObjectReader;
  marks: OwnershipMarks;
  /** A Warning Event on the resource. */
  warn(reason: string, message: string): void;
}

export interface TeardownRun {
  target: ObjectRef;
  owner: Owner;
  vouchers: Vouchers;
  teardown: Teardown;
  /** Throws unless the teardown object found there may be used (it is ours). */
  trust(c: Companion, have: TargetObject, observed: TargetObject, main: Relation): void;
}

/** 'pending' while it runs (its object's changes bring the resource back); 'retain' when it kept the target object's contents. */
export async function tearDown(a: TeardownAccess, run: TeardownRun, signal: AbortSignal): Promise<'pending' | 'done' | 'retain'> {
  const { target, owner, vouchers, teardown } = run;
  const observed = await a.read.get<TargetObject>(target.type, target.name, target.namespace, signal);
  const relation = observed && a.marks.relation(target.type, observed, owner, vouchers);
  // Nothing of ours there: nothing to tear down.
  if (!observed || (relation !== 'ours' && relation !== 'restored')) return 'done';
  const { object } = teardown;
  const have = await a.client.get<TargetObject>(object.type, object.name, object.namespace, signal);
  if (!have && teardown.onlyAfter) {
    const { ref, reached } = teardown.onlyAfter;
    const before = await a.client.get<TargetObject>(ref.type, ref.name, ref.namespace, signal);
    if (!before || !reached(before)) return 'done';
  }
  if (!have) {
    const missing = await firstMissing(a.client, teardown.requires ?? [], signal);
    if (missing) return cannotRun(a, run, `the ${object.purpose} cannot run: the ${missing.purpose} ${describeRef(missing)} is gone`);
    await a.client.create(object.type, a.marks.mark(object.type, object.build(), owner), signal);
    return 'pending';
  }
  run.trust(object, have, observed, relation);
  const outcome = teardown.outcome(have);
  if ('failed' in outcome) {
    throw new ReasonedError(
      Reasons.TeardownFailed,
      `the ${object.purpose} ${describeRef(object)} failed: ${outcome.failed}. Nothing else was deleted; delete that object to run it again`,
    );
  }
  if (!outcome.done) return 'pending';
  if (!outcome.kept) return 'done';
  a.warn(
    Reasons.KeptInTarget,
    teardown.retainWhenKept
      ? `${outcome.kept}. ${describeRef(target)} and what goes with it were kept too, marked Retain; delete them by hand when done`
      : outcome.kept,
  );
  return teardown.retainWhenKept ? 'retain' : 'done';
}

/** What it needs is gone: nothing is deleted (or, with retainWhenKept, everything is kept), and it says why. */
function cannotRun(a: TeardownAccess, run: TeardownRun, why: string): 'retain' {
  if (!run.teardown.retainWhenKept) {
    throw new ReasonedError(
      Reasons.TeardownFailed,
      `${why}. Nothing was deleted; restore it, or set reclaimPolicy Retain to keep everything`,
    );
  }
  a.warn(
    Reasons.KeptInTarget,
    `${why}, so nothing proves its bucket empty: ${describeRef(run.target)} and what goes with it were kept, marked Retain; delete them by hand when done`,
  );
  return 'retain';
}

async function firstMissing<R extends ObjectRef>(client: Client, refs: R[], signal: AbortSignal): Promise<R | undefined> {
  for (const ref of refs) if (!(await client.get(ref.type, ref.name, ref.namespace, signal))) return ref;
  return undefined;
}

/** Keeps the target object and these companions, their marks now saying Retain (conditional on the copies read). */
export async function retain(a: TeardownAccess, run: TeardownRun, companions: ObjectRef[], signal: AbortSignal): Promise<void> {
  const retained = { ...run.owner, reclaimPolicy: 'Retain' as const };
  for (const [i, ref] of [run.target, ...companions].entries()) {
    const have = await a.client.get<TargetObject>(ref.type, ref.name, ref.namespace, signal);
    const vouchers = i === 0 ? run.vouchers : { ...run.vouchers, recordedUid: undefined };
    const relation = have && a.marks.relation(ref.type, have, run.owner, vouchers);
    if (!have || (relation !== 'ours' && relation !== 'restored')) continue;
    const { labels, annotations } = a.marks.mark(ref.type, have, retained).metadata;
    const { uid, resourceVersion } = have.metadata;
    await a.client.mergePatch(ref.type, ref.name, ref.namespace, { metadata: { uid, resourceVersion, labels, annotations } }, signal);
  }
}
