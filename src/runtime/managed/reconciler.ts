// The managed reconciler: crossplane-runtime's lifecycle for one managed resource kind, generic over
// the provider's ExternalConnecter. Steady state writes nothing: the status is written only when it
// changed, the finalizer and annotations only when missing, events only on change. This file reads
// the lifecycle top to bottom and keeps an existing external resource up to date; a first create is
// in creation.ts, a deletion in deletion.ts, and what a pass writes of the resource in pass.ts.
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict, isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Logger } from '../../kit/logger.ts';
import { addFinalizer } from '../../kit/controller/finalizers.ts';
import {
  ANNOTATION_CREATE_SUCCEEDED,
  ANNOTATION_PAUSED,
  FINALIZER_MANAGED,
  hasFinalizer,
  isDeleting,
  withFinalizer,
} from '../../kit/meta.ts';
import { Reasons, UnprovenError, Synced } from '../reasons.ts';
import { ProgressWrites } from '../progress.ts';
import { done, requeue, type Reconciler, type Result, keyOf } from '../../kit/controller/result.ts';
import { copyOf, type CacheReader } from '../../kit/controller/informer.ts';
import { createExternal } from './creation.ts';
import { deleteExternal, keepAndLetGo, letGo } from './deletion.ts';
import { LifecycleMeasures } from './measures.ts';
import { StepFailed } from './failures.ts';
import { ManagedPass, type ManagedKind } from './pass.ts';
import { keepsOnDeletion, policyOf, type Policy } from './policies.ts';
import type { ConnectionSecrets } from './publisher.ts';
import { RecordedError, type ExternalClient, type ExternalConnecter, type ExternalObservation, type ManagedResource } from './types.ts';

export interface ManagedReconcilerOptions<MR extends ManagedResource> {
  type: ResourceType;
  client: Client;
  /** Read-only: what the reconciler changes is its own copy. */
  cache: Pick<CacheReader<MR>, 'get'>;
  connecter: ExternalConnecter<MR>;
  /** Connection Secrets as cached: an unchanged one is checked without a read. */
  secrets?: ConnectionSecrets;
  recorder: EventRecorder;
  log: Logger;
  pollIntervalMs?: number;
  /** Each poll is moved by a random amount in [-jitter, +jitter] so resources do not poll in lockstep. */
  pollJitterMs?: number;
  creationGraceMs?: number;
  now?: () => Date;
}

/** A resource connected to and observed: the client of its external resource, and what observe found. */
interface Seen<MR extends ManagedResource> {
  external: ExternalClient<MR>;
  observation: ExternalObservation;
}

export class ManagedReconciler<MR extends ManagedResource> implements Reconciler {
  private readonly kind: ManagedKind;
  private readonly cache: Pick<CacheReader<MR>, 'get'>;
  private readonly connecter: ExternalConnecter<MR>;
  private readonly creationGraceMs: number;

  constructor(opts: ManagedReconcilerOptions<MR>) {
    const { type, client, recorder, log, secrets, now = () => new Date() } = opts;
    this.kind = {
      ...{ type, client, recorder, log, secrets, now },
      pollIntervalMs: opts.pollIntervalMs ?? 600_000,
      pollJitterMs: opts.pollJitterMs ?? 60_000,
      progress: new ProgressWrites(),
      measures: new LifecycleMeasures(type, now),
    };
    [this.cache, this.connecter, this.creationGraceMs] = [opts.cache, opts.connecter, opts.creationGraceMs ?? 30_000];
  }

  /** The resource is gone (whoever let it go): nothing is kept for it. */
  forget(uid: string | undefined): void {
    this.kind.measures.forget(uid);
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.cache.get(key);
    if (!cached) return done();
    const pass = new ManagedPass(this.kind, copyOf<MR>(cached), cached, signal);
    try {
      return await this.reconcileResource(pass).catch((err: unknown) => {
        if (err instanceof StepFailed) return pass.fail(err.step, err.cause, err.ready);
        throw err;
      });
    } catch (err) {
      // A stale read or a concurrent writer: try again soon, quietly (Crossplane's conflict rule).
      if (isConflict(err)) return requeue();
      if (isNotFound(err)) return done(); // deleted while we worked
      throw err;
    }
  }

  // The lifecycle, one step each: paused, not placed, let go keeping what it made (marked so), then
  // (connected and observed) deleting, creating, or keeping an existing external resource up to date.
  private async reconcileResource(pass: ManagedPass<MR>): Promise<Result> {
    const { mr } = pass;
    const policy = policyOf(mr.spec as { managementPolicies?: string[] });
    if (mr.metadata.annotations?.[ANNOTATION_PAUSED] === 'true' || (policy.valid && policy.paused)) return paused(pass);
    if (!policy.valid) return invalidPolicy(pass);
    const deleting = isDeleting(mr.metadata);
    // Not placed yet (the scheduler sets providerRef): nothing of it exists in any target.
    if (!mr.spec.providerRef) return deleting ? letGo(pass) : done();
    // Retain/Orphan, or no Delete among the policies: nothing is deleted in the target.
    if (deleting && keepsOnDeletion(mr.spec)) return keepAndLetGo(pass, this.connecter);

    const seen = await this.connectAndObserve(pass);
    if ('result' in seen) return seen.result;
    const { observation } = seen;
    if (!observation.exists && !deleting && !policy.create) return missingNotCreated(pass, policy);
    if (!observation.exists && !deleting && this.justCreated(mr)) {
      this.kind.recorder.normal(mr, Reasons.PendingExternalResource, 'Waiting for the external resource to appear after creation');
      return requeue();
    }
    if (deleting) return deleteExternal(pass, seen);
    return publishAndConverge(pass, { ...seen, policy });
  }

  private async connectAndObserve(pass: ManagedPass<MR>): Promise<{ result: Result } | Seen<MR>> {
    let external;
    try {
      external = await this.connecter.connect(pass.mr, pass.signal);
    } catch (err) {
      throw new StepFailed('connect', err);
    }
    try {
      return { external, observation: await external.observe(pass.mr, pass.signal) };
    } catch (err) {
      if (!(err instanceof UnprovenError)) throw new StepFailed('observe', err);
      // What it relies on cannot be proven: not Ready, and its Secret leads nowhere it cannot vouch for until it can.
      try {
        await pass.withhold(err.withheld);
      } catch (failed) {
        throw new StepFailed('withhold', failed);
      }
      await pass.fail('observe', err, { type: 'Ready', status: 'False', reason: err.reason, message: err.message });
      // A state that holds until someone acts in the target (on what our watches may not see): looked at each poll, not backed off.
      return { result: pass.poll() };
    }
  }

  /** Created within the grace period: an external resource not seen yet may only be on its way. */
  private justCreated(mr: MR): boolean {
    const succeededAt = Date.parse(mr.metadata.annotations?.[ANNOTATION_CREATE_SUCCEEDED] ?? '');
    return this.kind.now().getTime() - succeededAt < this.creationGraceMs;
  }
}

/** A set of policies crossplane-runtime does not support (the CRD refuses it; this catches what predates the rule). */
async function invalidPolicy<MR extends ManagedResource>(pass: ManagedPass<MR>): Promise<Result> {
  const message = `spec.managementPolicies is set to a value (${JSON.stringify(pass.mr.spec.managementPolicies)}) which is not supported`;
  pass.kind.recorder.warning(pass.mr, Reasons.CannotUseInvalidManagementPolicy, message);
  pass.conditions(Synced.error(Reasons.CannotUseInvalidManagementPolicy, message));
  await pass.writeStatus();
  return done();
}

/** The external resource is missing and the policies forbid making it (observe-only: an import of nothing). */
async function missingNotCreated<MR extends ManagedResource>(pass: ManagedPass<MR>, policy: Policy): Promise<Result> {
  const message = policy.onlyObserve
    ? 'observe failed: external resource does not exist'
    : 'the external resource does not exist, and spec.managementPolicies do not include Create';
  if (!pass.says('Synced', Reasons.ReconcileError)) pass.kind.recorder.warning(pass.mr, Reasons.CannotObserveExternalResource, message);
  pass.conditions(Synced.error(Reasons.ReconcileError, message));
  await pass.writeStatus();
  return pass.poll(); // a stable state, not a failure to retry fast
}

async function paused<MR extends ManagedResource>(pass: ManagedPass<MR>): Promise<Result> {
  if (!pass.says('Synced', Reasons.ReconcilePaused))
    pass.kind.recorder.normal(pass.mr, Reasons.ReconciliationPaused, 'Reconciliation is paused via the pause annotation');
  pass.conditions({ type: 'Synced', status: 'False', reason: Reasons.ReconcilePaused });
  await pass.writeStatus();
  return done();
}

/** Not deleting: publish what observe found, then create, or record what observe asked and repair drift. */
async function publishAndConverge<MR extends ManagedResource>(
  pass: ManagedPass<MR>,
  { external, observation, policy }: Seen<MR> & { policy: Policy },
): Promise<Result> {
  try {
    await pass.publish(observation.connectionDetails);
  } catch (err) {
    throw new StepFailed('publish', err);
  }
  // Crash-safe: the attempt is recorded before the external write, its outcome after (creation.ts).
  if (!observation.exists) return createExternal(pass, external);
  // After the publish: a rotation's record says its new keys were published from then on.
  await persistObserved(pass, observation);
  // Drift is left as it is where the policies do not include Update (it is still reported as Synced).
  if (observation.upToDate || !policy.update) {
    pass.kind.measures.upToDate(pass.mr);
    pass.conditions(Synced.success());
    return pass.poll({ recheckAfterMs: observation.recheckAfterMs, deferredMs: await pass.writeStatus(), soonerUntilReady: true });
  }
  return repair(pass, { external, observation });
}

/**
 * What an existing external resource asks of the managed resource: the finalizer, late-initialized
 * fields and annotations (what proves its external resource), in one write. The finalizer alone is
 * a JSON patch; with anything else it rides in that update (conditional on the resourceVersion).
 * Updates the pass's copy in place.
 */
async function persistObserved<MR extends ManagedResource>(pass: ManagedPass<MR>, observation: ExternalObservation): Promise<void> {
  const { kind } = pass;
  const { mr } = pass;
  const finalizerMissing = !hasFinalizer(mr.metadata, FINALIZER_MANAGED);
  const annotate = Object.entries(observation.annotations ?? {}).filter(([k, v]) => mr.metadata.annotations?.[k] !== v);
  if (!finalizerMissing && !observation.lateInitialized && !annotate.length) return;
  try {
    if (!observation.lateInitialized && !annotate.length) {
      const patched = await addFinalizer(kind.client, kind.type, pass.mr, FINALIZER_MANAGED, pass.signal);
      mr.metadata = patched.metadata;
      return;
    }
    if (finalizerMissing) mr.metadata.finalizers = withFinalizer(mr.metadata, FINALIZER_MANAGED);
    if (annotate.length) mr.metadata.annotations = { ...mr.metadata.annotations, ...Object.fromEntries(annotate) };
    await pass.update();
  } catch (err) {
    throw new StepFailed(finalizerMissing ? 'addFinalizer' : 'updateManaged', err);
  }
  // Late init only copied what the target holds, so this pass's observation holds for the new
  // generation too; stamping the old one would cost another status write on the next poll.
  if (observation.lateInitialized)
    mr.status = { ...mr.status, conditions: mr.status?.conditions?.map((c) => ({ ...c, observedGeneration: mr.metadata.generation })) };
}

/**
 * What an update made that the resource must record (what proves an object made again): until it is
 * recorded, the record names the object it replaced.
 */
async function recordMade<MR extends ManagedResource>(
  pass: ManagedPass<MR>,
  annotations: Record<string, string> | undefined,
): Promise<void> {
  if (!annotations || Object.entries(annotations).every(([k, v]) => pass.mr.metadata.annotations?.[k] === v)) return;
  try {
    await pass.annotate(annotations);
  } catch (err) {
    throw new StepFailed('recordMade', err);
  }
}

/** The external resource drifted: update it, publish again, poll. */
async function repair<MR extends ManagedResource>(pass: ManagedPass<MR>, { external, observation }: Seen<MR>): Promise<Result> {
  const { kind } = pass;
  const { mr } = pass;
  kind.log.debug('external resource drifted; updating', { resource: keyOf(mr.metadata), diff: observation.diff });
  kind.measures.drifted(mr);
  let updated;
  try {
    updated = await external.update(pass.mr, pass.signal);
  } catch (err) {
    if (err instanceof RecordedError) await recordMade(pass, err.annotations);
    throw new StepFailed('update', err instanceof RecordedError ? err.cause : err);
  }
  await recordMade(pass, updated.annotations);
  try {
    await pass.publish(updated.connectionDetails);
  } catch (err) {
    throw new StepFailed('publish', err);
  }
  kind.recorder.normal(
    mr,
    Reasons.UpdatedExternalResource,
    observation.diff ? `Updated the external resource (${observation.diff})` : 'Updated the external resource',
  );
  pass.conditions(Synced.success());
  return pass.poll({ recheckAfterMs: observation.recheckAfterMs, deferredMs: await pass.writeStatus(), soonerUntilReady: true });
}
