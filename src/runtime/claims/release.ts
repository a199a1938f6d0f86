// A deleted claim lets go of what it bound: each managed resource that names it is released (and,
// under reclaim policy Delete, deleted), its connection Secret copy goes, then its finalizer.
import { copyOf, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { removeFinalizer } from '../../kit/controller/finalizers.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { unpublishSecret } from '../managed/publisher.ts';
import { reclaimPolicyOf, type ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import { FINALIZER_CLAIM, type Claim } from './claim.ts';

export interface Releaser {
  client: Client;
  claims: ResourceType;
  recorder: EventRecorder;
}

/** A managed resource a claim holds, with its kind. */
export interface Held<MR extends ManagedResource = ManagedResource> {
  type: ResourceType;
  /** As cached: unbind works on a copy. */
  mr: ReadonlyDeep<MR>;
}

/** Releases every resource in `held`, removes the claim's Secret copy, then its finalizer. */
export async function releaseClaim(
  r: Releaser,
  claim: Claim,
  held: Held[],
  signal: AbortSignal,
  /** What must be written of others before the claim may go: once its finalizer is removed, no pass comes back for it. */
  last?: () => Promise<void>,
): Promise<void> {
  for (const { type, mr } of held) await unbind(r, claim, type, copyOf<ManagedResource>(mr), signal);
  const to = claim.spec?.writeConnectionSecretToRef;
  if (to) await unpublishSecret({ client: r.client, signal }, claim, { namespace: claim.metadata.namespace!, name: to.name });
  await last?.();
  await removeFinalizer(r.client, r.claims, claim, FINALIZER_CLAIM, signal);
}

// Each step leaves the resource findable by its claimRef until the last one, so a conflict or a
// crash part-way is finished by the next pass: never a resource left Bound to a claim now gone.
async function unbind(r: Releaser, claim: Claim, type: ResourceType, mr: ManagedResource, signal: AbortSignal): Promise<void> {
  const where = `${type.kind} ${mr.metadata.namespace}/${mr.metadata.name}`;
  // Released first, so it never shows as Bound while its deletion is pending.
  if (mr.status?.bindingPhase !== 'Released') {
    const released = await r.client
      .updateStatus<ManagedResource>(type, { ...mr, status: { ...mr.status, bindingPhase: 'Released' } }, signal)
      .catch(ignoreNotFound);
    if (!released) return;
    mr = released;
  }
  if (reclaimPolicyOf(mr.spec) === 'Delete') {
    await r.client.delete(type, { namespace: mr.metadata.namespace, name: mr.metadata.name }, { uid: mr.metadata.uid, signal });
    r.recorder.normal(claim, Reasons.DeletedManagedResource, `Deleted ${where} (reclaim policy Delete)`);
    return;
  }
  const { claimRef: _, ...spec } = mr.spec;
  if (!(await r.client.update(type, { ...mr, spec }, signal).catch(ignoreNotFound))) return;
  r.recorder.normal(claim, Reasons.ReleasedManagedResource, `Released ${where}; it is kept (reclaim policy ${reclaimPolicyOf(mr.spec)})`);
}

function ignoreNotFound(err: unknown): undefined {
  if (isNotFound(err)) return undefined;
  throw err;
}
