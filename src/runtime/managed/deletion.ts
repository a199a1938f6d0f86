// A managed resource's deletion: under Delete, its external resource goes first and then its
// finalizer; under Retain (or without Delete among its policies) what it made is marked kept and only
// the finalizer goes. Finalizers others own go first, and a deletion that waits on something else
// says what, once.
import { removeFinalizer } from '../../kit/controller/finalizers.ts';
import { FINALIZER_MANAGED, hasFinalizer } from '../../kit/meta.ts';
import { done, requeue, requeueAfter, type Result } from '../../kit/controller/result.ts';
import { Reasons, Ready, Synced } from '../reasons.ts';
import { StepFailed } from './failures.ts';
import type { ManagedPass } from './pass.ts';
import type { ExternalClient, ExternalConnecter, ExternalDeletion, ExternalObservation, ManagedResource } from './types.ts';

/** Nothing to do in the target: the connection Secret and the finalizer go. */
export async function letGo<MR extends ManagedResource>(pass: ManagedPass<MR>): Promise<Result> {
  const { kind } = pass;
  const { mr } = pass;
  await pass.unpublish();
  if (hasFinalizer(mr.metadata, FINALIZER_MANAGED)) {
    // A JSON patch (finalizers.ts): the resource is about to be gone.
    await removeFinalizer(kind.client, kind.type, pass.mr, FINALIZER_MANAGED, pass.signal);
    kind.measures.deleted(mr);
  }
  return done();
}

/**
 * Let go without deleting anything: what it made is marked kept first (ExternalClient.keep), where
 * its marks still say Delete (observed only, or a policy changed just before), or a leak sweep would
 * take it once this resource is gone. Until the target can be reached to say so, it waits.
 */
export async function keepAndLetGo<MR extends ManagedResource>(pass: ManagedPass<MR>, connecter: ExternalConnecter<MR>): Promise<Result> {
  if (hasFinalizer(pass.mr.metadata, FINALIZER_MANAGED)) {
    let external;
    try {
      external = await connecter.connect(pass.mr, pass.signal);
    } catch (err) {
      throw new StepFailed('connect', err, Ready.deleting());
    }
    try {
      await external.keep?.(pass.mr, pass.signal);
    } catch (err) {
      throw new StepFailed('keep', err, Ready.deleting());
    }
  }
  return letGo(pass);
}

/** Deleting under reclaim policy Delete: the external resource goes first, then the finalizer. */
export async function deleteExternal<MR extends ManagedResource>(
  pass: ManagedPass<MR>,
  { external, observation }: { external: ExternalClient<MR>; observation: ExternalObservation },
): Promise<Result> {
  const { kind } = pass;
  const { mr } = pass;
  // Others clean up first: said (what, and since when), and their finalizers' removal wakes us.
  // Without ours (never added: an import deleted at once), nothing holds the object after theirs go: no waiting then.
  const others = (mr.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_MANAGED);
  if (others.length && hasFinalizer(mr.metadata, FINALIZER_MANAGED)) {
    const since = mr.metadata.deletionTimestamp ?? 'its deletion';
    pass.conditions(
      Ready.deleting(),
      Synced.error(
        Reasons.WaitingForFinalizers,
        `waiting since ${since} for finalizers provider-rook does not own to go first: ${others.join(', ')}`,
      ),
    );
    await pass.writeStatus();
    return requeueAfter(kind.pollIntervalMs);
  }
  if (observation.exists) {
    let deletion;
    try {
      deletion = await external.delete(pass.mr, pass.signal);
    } catch (err) {
      throw new StepFailed('delete', err, Ready.deleting());
    }
    if (deletion?.requested !== false) kind.recorder.normal(mr, Reasons.DeletedExternalResource, 'Deleted the external resource');
    if (deletion?.waiting) return waitToDelete(pass, deletion.waiting);
    if (!deletion?.gone) {
      pass.conditions(Ready.deleting(), Synced.success());
      await pass.writeStatus();
      return requeue(); // the next pass confirms it is gone
    }
  }
  return letGo(pass);
}

/** Its deletion waits for something else to go first: said once (Event) and in Synced; what it waits for wakes it. */
async function waitToDelete<MR extends ManagedResource>(
  pass: ManagedPass<MR>,
  waiting: NonNullable<ExternalDeletion['waiting']>,
): Promise<Result> {
  if (!pass.says('Synced', waiting.reason)) pass.kind.recorder.warning(pass.mr, waiting.reason, waiting.message);
  pass.conditions(Ready.deleting(), Synced.error(waiting.reason, waiting.message));
  await pass.writeStatus();
  return pass.poll({ recheckAfterMs: waiting.recheckAfterMs });
}
