// What a resource keeps in its target when it goes without deleting it (reclaim policy Retain or
// Orphan, no Delete among its policies, or a store kept for the data it may hold): its object and
// companions stay, their signed marks saying so, or a leak sweep would take them once it is gone.
import { sameJson } from '../../kit/json.ts';
import type { ObjectRef } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import type { Relation } from '../ownership/marks.ts';
import type { Companion, KindContext, TargetObject, Teardown } from './kind.ts';
import type { NativePass } from './pass.ts';
import { retiredBy } from './rotation.ts';

/**
 * What a resource let go without deleting (reclaim policy Retain or Orphan, no Delete among its
 * policies) keeps: its object and companions, their marks saying its policy now where they still
 * said Delete (an observe-only resource writes nothing, and a changed policy may not be repaired yet
 * when it is deleted), or a leak sweep would take them once it is gone.
 */
export async function keep<MR extends ManagedResource>(pass: NativePass<MR>): Promise<void> {
  const ctx = pass.recorded();
  const teardown = pass.kind.teardown?.(pass.mr, pass.name, ctx);
  const { reclaimPolicy } = pass.owner;
  await retain(pass, pass.target(ctx), ownedCompanions(pass, ctx, teardown), reclaimPolicy === 'Retain' ? 'Retain' : 'Orphan');
}

/** Every companion the resource may have in the target: the kind's, those of keys past their grace period (Rotation.retiredBy), and its teardown's. */
export function ownedCompanions<MR extends ManagedResource>(
  pass: NativePass<MR>,
  ctx: KindContext,
  teardown: Teardown | undefined,
): Companion[] {
  return [...pass.companions(ctx), ...retiredBy(pass.kind, pass.mr, pass.name, ctx), ...(teardown ? [teardown.object] : [])];
}

/** Marks the target object and these companions kept (Retain, or `policy`), where ours and not marked so; says what the object is to us. */
export async function retain<MR extends ManagedResource>(
  pass: NativePass<MR>,
  target: ObjectRef,
  companions: Companion[],
  policy: 'Retain' | 'Orphan' = 'Retain',
): Promise<Relation | undefined> {
  const { client, marks, signal } = pass;
  const retained = { ...pass.owner, reclaimPolicy: policy };
  // The object first: what it is to us vouches for its companions, as when they are deleted (a
  // restored one's companions are signed for its earlier uid, and left unmarked a sweep would take them).
  let main: Relation | undefined;
  for (const [i, ref] of [target, ...companions].entries()) {
    const have = await client.get<TargetObject>(ref.type, { namespace: ref.namespace, name: ref.name }, signal);
    const vouchers = i === 0 ? pass.vouchers : pass.ownership.companionVouchersFor(companions[i - 1]!, main);
    const relation = have && pass.ownership.relationOf(ref.type, have, vouchers);
    if (i === 0) main = relation || undefined;
    if (!have || (relation !== 'ours' && relation !== 'restored')) continue;
    const { labels, annotations } = marks.mark(ref.type, have, retained).metadata;
    if (relation === 'ours' && sameJson(labels, have.metadata.labels) && sameJson(annotations, have.metadata.annotations)) continue;
    const { uid, resourceVersion } = have.metadata;
    await client.mergePatch(
      ref.type,
      { namespace: ref.namespace, name: ref.name },
      { metadata: { uid, resourceVersion, labels, annotations } },
      signal,
    );
  }
  return main;
}
