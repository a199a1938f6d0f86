// The managed reconciler: crossplane-runtime's lifecycle for one managed resource kind, generic over
// the provider's ExternalConnecter. Steady state writes nothing: the status is written only when it
// changed, the finalizer and annotations only when missing, events only on change. One lifecycle,
// read top to bottom, past 400 lines on purpose: its steps share the status writer and the
// progress clock, and a first create lives in creation.ts.
import { setCondition, getCondition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { sameJson } from '../../kit/json.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict, isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Logger } from '../../kit/logger.ts';
import { addFinalizer, removeFinalizer } from '../../kit/controller/finalizers.ts';
import {
  ANNOTATION_CREATE_SUCCEEDED,
  ANNOTATION_PAUSED,
  FINALIZER_MANAGED,
  hasFinalizer,
  isDeleting,
  withFinalizer,
} from '../../kit/meta.ts';
import { Reasons, UnprovenError, Ready, Synced, reasonOf, type Reason } from '../reasons.ts';
import { ProgressWrites } from '../progress.ts';
import { done, requeue, requeueAfter, type Reconciler, type Result, keyOf } from '../../kit/controller/result.ts';
import { createExternal, type CreationSteps, type FailureAt } from './creation.ts';
import { keepsOnDeletion, policyOf, type Policy } from './policies.ts';
import { Failures, type FailedStep } from './failures.ts';
import { publishSecret, unpublishSecret, withholdKeys, type ConnectionSecrets, type SecretsAccess } from './publisher.ts';
import {
  RecordedError,
  type ConnectionDetails,
  type ExternalClient,
  type ExternalConnecter,
  type ExternalObservation,
  type ManagedResource,
} from './types.ts';
import { copyOf, type CacheReader, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { gvkLabel, managedMetrics } from '../managed-metrics.ts';

/** The longest a resource that is not Ready waits for its next look (from caches: no request). */
const NOT_READY_POLL_MS = 30_000;

/** The cache's copy of a resource: compared against, never changed. */
type Cached<MR> = ReadonlyDeep<MR>;

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
  private readonly o: Required<Omit<ManagedReconcilerOptions<MR>, 'secrets'>> & Pick<ManagedReconcilerOptions<MR>, 'secrets'>;
  private readonly gvk: { gvk: string };
  /** Resources first reconciled by this process and not Ready yet: their first readiness is measured. */
  private readonly newSinceStart = new Set<string>();
  /** When each resource (by uid) was last found up to date: what drift_seconds measures from. */
  private readonly lastUpToDate = new Map<string, number>();
  private readonly progress = new ProgressWrites();
  /** What the create step (creation.ts) uses of this reconciler. */
  private readonly steps: CreationSteps<MR>;

  constructor(opts: ManagedReconcilerOptions<MR>) {
    this.o = { pollIntervalMs: 600_000, pollJitterMs: 60_000, creationGraceMs: 30_000, now: () => new Date(), ...opts };
    this.gvk = { gvk: gvkLabel(this.o.type) };
    this.steps = {
      client: this.o.client,
      type: this.o.type,
      recorder: this.o.recorder,
      now: () => this.o.now(),
      update: (mr, signal) => this.update(mr, signal),
      fail: (...args) => this.fail(...args),
      publish: (mr, details, signal) => this.publish(mr, details, signal),
      setConditions: (mr, ...conds) => this.setConditions(mr, ...conds),
      observeFirsts: (mr, cached) => this.observeFirsts(mr, cached),
    };
  }

  /** The resource is gone (whoever let it go): nothing is kept for it. */
  forget(uid: string | undefined): void {
    for (const kept of [this.lastUpToDate, this.newSinceStart]) kept.delete(uid ?? '');
  }

  /** Seconds from a timestamp of the resource (creation, deletion) until now. */
  private since(at: string | undefined): number | undefined {
    const t = Date.parse(at ?? '');
    return Number.isNaN(t) ? undefined : Math.max(0, (this.o.now().getTime() - t) / 1000);
  }

  /** The finalizer goes (a JSON patch, see finalizers.ts): the resource is about to be gone. */
  private async release(mr: MR, signal: AbortSignal): Promise<void> {
    if (!hasFinalizer(mr.metadata, FINALIZER_MANAGED)) return;
    await removeFinalizer(this.o.client, this.o.type, mr, FINALIZER_MANAGED, signal);
    this.forget(mr.metadata.uid);
    const took = this.since(mr.metadata.deletionTimestamp);
    if (took !== undefined) managedMetrics.deletion.observe(this.gvk, took);
  }

  /** Nothing to do in the target: the connection Secret and the finalizer go. */
  private async letGo(mr: MR, signal: AbortSignal): Promise<Result> {
    await this.unpublish(mr, signal).then(() => this.release(mr, signal));
    return done();
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.cache.get(key);
    if (!cached) return done();
    const mr = copyOf<MR>(cached);
    try {
      return await this.reconcileResource(mr, cached, signal);
    } catch (err) {
      // A stale read or a concurrent writer: try again soon, quietly (Crossplane's conflict rule).
      if (isConflict(err)) return requeue();
      if (isNotFound(err)) return done(); // deleted while we worked
      throw err;
    }
  }

  /** The next speculative poll; sooner for a recheck the observation asked for, or a status write that waits. */
  private poll(recheckAfterMs?: number, deferredMs = 0, mr?: MR): Result {
    const jitter = (Math.random() * 2 - 1) * this.o.pollJitterMs;
    // A resource that is not Ready yet may wait on what no watch shows (a Gateway's address, a consumer
    // still holding old keys): it is looked at again within NOT_READY_POLL_MS, as provider-kubernetes does.
    const notReady = mr !== undefined && getCondition(mr.status?.conditions, 'Ready')?.status !== 'True';
    const interval = notReady ? Math.min(this.o.pollIntervalMs, NOT_READY_POLL_MS) : this.o.pollIntervalMs + jitter;
    return requeueAfter(Math.min(interval, recheckAfterMs ?? Infinity, deferredMs || Infinity));
  }

  private setConditions(mr: MR, ...conds: Parameters<typeof setCondition>[1][]): void {
    let list = mr.status?.conditions;
    for (const c of conds) list = setCondition(list, { ...c, observedGeneration: mr.metadata.generation }, this.o.now());
    mr.status = { ...mr.status, conditions: list };
  }

  /** Writes status only when it differs from what the cache holds. */
  private async writeStatus(mr: MR, cached: Cached<MR>, signal: AbortSignal): Promise<number> {
    if (sameJson(mr.status ?? {}, cached.status ?? {})) return 0;
    const [key, now] = [keyOf(mr.metadata), this.o.now().getTime()];
    // Only a new progress message: written when the window since our last write ends (progress.ts).
    const wait = this.progress.wait(key, mr.status, cached.status, now);
    if (wait > 0) return wait;
    await this.o.client.updateStatus(this.o.type, mr, signal);
    this.progress.wrote(key, now);
    this.observeFirsts(mr, cached);
    return 0;
  }

  /** First reports, as crossplane-runtime measures them: the first Synced, the first Ready=True. */
  private observeFirsts(mr: MR, cached: Cached<MR>): void {
    const before = (type: string) => getCondition(cached.status?.conditions, type);
    const now = (type: string) => getCondition(mr.status?.conditions, type);
    const age = this.since(mr.metadata.creationTimestamp);
    if (age === undefined) return;
    const uid = mr.metadata.uid ?? '';
    if (!before('Synced') && now('Synced')) {
      managedMetrics.firstTimeToReconcile.observe(this.gvk, age);
      this.newSinceStart.add(uid);
    }
    if (now('Ready')?.status === 'True' && this.newSinceStart.delete(uid)) managedMetrics.firstTimeToReadiness.observe(this.gvk, age);
  }

  /** Reports a failed step (its Event, the Synced error, a status write) and says when to try again. */
  private async fail(at: FailureAt<MR>, step: FailedStep, err: unknown, ready?: Parameters<typeof setCondition>[1]): Promise<Result> {
    const { mr, cached, signal } = at;
    if (isConflict(err)) return requeue();
    const { event, prefix } = Failures[step];
    const message = `${prefix}: ${(err as Error).message}`;
    this.o.recorder.warning(mr, event, message);
    this.setConditions(mr, ...(ready ? [ready] : []), Synced.error(reasonOf(err), message));
    this.o.log.debug('reconcile error', { resource: keyOf(mr.metadata), error: message });
    await this.writeStatus(mr, cached, signal);
    return requeue();
  }

  private async update(mr: MR, signal: AbortSignal): Promise<MR> {
    const saved = mr.status;
    const updated = await this.o.client.update<MR>(this.o.type, mr, signal);
    return { ...updated, status: saved };
  }

  // The lifecycle, one step each: paused, not placed, let go keeping what it made (marked so), then
  // (connected and observed) deleting, creating, or keeping an existing external resource up to date.
  private async reconcileResource(mr: MR, cached: Cached<MR>, signal: AbortSignal): Promise<Result> {
    const policy = policyOf(mr.spec as { managementPolicies?: string[] });
    if (mr.metadata.annotations?.[ANNOTATION_PAUSED] === 'true' || (policy.valid && policy.paused)) return this.paused(mr, cached, signal);
    if (!policy.valid) return this.invalidPolicy(mr, cached, signal);
    const deleting = isDeleting(mr.metadata);
    // Not placed yet (the scheduler sets providerRef): nothing of it exists in any target.
    if (!mr.spec.providerRef) return deleting ? this.letGo(mr, signal) : done();
    // Retain/Orphan, or no Delete among the policies: nothing is deleted in the target.
    if (deleting && keepsOnDeletion(mr.spec)) return this.keepAndLetGo(mr, cached, signal);

    const seen = await this.connectAndObserve(mr, cached, signal);
    if ('result' in seen) return seen.result;
    const { observation } = seen;
    if (!observation.exists && !deleting && !policy.create) return this.missingNotCreated(mr, cached, policy, signal);
    if (!observation.exists && !deleting && this.justCreated(mr)) {
      this.o.recorder.normal(mr, Reasons.PendingExternalResource, 'Waiting for the external resource to appear after creation');
      return requeue();
    }
    if (deleting) return this.deleteExternal(mr, cached, seen, signal);
    return this.publishAndConverge(mr, cached, { ...seen, policy }, signal);
  }

  /** A set of policies crossplane-runtime does not support (the CRD refuses it; this catches what predates the rule). */
  private async invalidPolicy(mr: MR, cached: Cached<MR>, signal: AbortSignal): Promise<Result> {
    const message = `spec.managementPolicies is set to a value (${JSON.stringify(mr.spec.managementPolicies)}) which is not supported`;
    this.o.recorder.warning(mr, Reasons.CannotUseInvalidManagementPolicy, message);
    this.setConditions(mr, Synced.error(Reasons.CannotUseInvalidManagementPolicy, message));
    await this.writeStatus(mr, cached, signal);
    return done();
  }

  /** The external resource is missing and the policies forbid making it (observe-only: an import of nothing). */
  private async missingNotCreated(mr: MR, cached: Cached<MR>, policy: Policy, signal: AbortSignal): Promise<Result> {
    const message = policy.onlyObserve
      ? 'observe failed: external resource does not exist'
      : 'the external resource does not exist, and spec.managementPolicies do not include Create';
    if (!hasConditionReason(mr, 'Synced', Reasons.ReconcileError))
      this.o.recorder.warning(mr, Reasons.CannotObserveExternalResource, message);
    this.setConditions(mr, Synced.error(Reasons.ReconcileError, message));
    await this.writeStatus(mr, cached, signal);
    return this.poll(); // a stable state, not a failure to retry fast
  }

  private async paused(mr: MR, cached: Cached<MR>, signal: AbortSignal): Promise<Result> {
    if (!hasConditionReason(mr, 'Synced', Reasons.ReconcilePaused)) {
      this.o.recorder.normal(mr, Reasons.ReconciliationPaused, 'Reconciliation is paused via the pause annotation');
    }
    this.setConditions(mr, { type: 'Synced', status: 'False', reason: Reasons.ReconcilePaused });
    await this.writeStatus(mr, cached, signal);
    return done();
  }

  private async connectAndObserve(mr: MR, cached: Cached<MR>, signal: AbortSignal): Promise<{ result: Result } | Seen<MR>> {
    let external;
    try {
      external = await this.o.connecter.connect(mr, signal);
    } catch (err) {
      return { result: await this.fail({ mr, cached, signal }, 'connect', err) };
    }
    try {
      return { external, observation: await external.observe(mr, signal) };
    } catch (err) {
      if (!(err instanceof UnprovenError)) return { result: await this.fail({ mr, cached, signal }, 'observe', err) };
      // What it relies on cannot be proven: not Ready, and its Secret leads nowhere it cannot vouch for until it can.
      const ref = mr.spec.writeConnectionSecretToRef;
      const withheld = ref
        ? withholdKeys(this.secretsAt(signal), mr, { namespace: mr.metadata.namespace!, name: ref.name }, err.withheld)
        : undefined;
      const failed = await withheld?.then(
        () => undefined,
        (e: unknown) => e,
      );
      if (failed)
        return {
          result: await this.fail({ mr, cached, signal }, 'withhold', failed),
        };
      const ready = { type: 'Ready', status: 'False' as const, reason: err.reason, message: err.message };
      await this.fail({ mr, cached, signal }, 'observe', err, ready);
      // A state that holds until someone acts in the target (on what our watches may not see): looked at each poll, not backed off.
      return { result: this.poll() };
    }
  }

  /**
   * Let go without deleting anything: what it made is marked kept first (ExternalClient.keep), where
   * its marks still say Delete (observed only, or a policy changed just before), or a leak sweep would
   * take it once this resource is gone. Until the target can be reached to say so, it waits.
   */
  private async keepAndLetGo(mr: MR, cached: Cached<MR>, signal: AbortSignal): Promise<Result> {
    if (hasFinalizer(mr.metadata, FINALIZER_MANAGED)) {
      let external;
      try {
        external = await this.o.connecter.connect(mr, signal);
      } catch (err) {
        return this.fail({ mr, cached, signal }, 'connect', err, Ready.deleting());
      }
      try {
        await external.keep?.(mr, signal);
      } catch (err) {
        return this.fail({ mr, cached, signal }, 'keep', err, Ready.deleting());
      }
    }
    return this.letGo(mr, signal);
  }

  /** Created within the grace period: an external resource not seen yet may only be on its way. */
  private justCreated(mr: MR): boolean {
    const succeededAt = Date.parse(mr.metadata.annotations?.[ANNOTATION_CREATE_SUCCEEDED] ?? '');
    return this.o.now().getTime() - succeededAt < this.o.creationGraceMs;
  }

  /** Deleting under reclaim policy Delete: the external resource goes first, then the finalizer. */
  private async deleteExternal(mr: MR, cached: Cached<MR>, { external, observation }: Seen<MR>, signal: AbortSignal): Promise<Result> {
    // Others clean up first: said (what, and since when), and their finalizers' removal wakes us.
    // Without ours (never added: an import deleted at once), nothing holds the object after theirs go: no waiting then.
    const others = (mr.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_MANAGED);
    if (others.length && hasFinalizer(mr.metadata, FINALIZER_MANAGED)) {
      const since = mr.metadata.deletionTimestamp ?? 'its deletion';
      this.setConditions(
        mr,
        Ready.deleting(),
        Synced.error(
          Reasons.WaitingForFinalizers,
          `waiting since ${since} for finalizers provider-rook does not own to go first: ${others.join(', ')}`,
        ),
      );
      await this.writeStatus(mr, cached, signal);
      return requeueAfter(this.o.pollIntervalMs);
    }
    if (observation.exists) {
      let deletion;
      try {
        deletion = await external.delete(mr, signal);
      } catch (err) {
        return this.fail({ mr, cached, signal }, 'delete', err, Ready.deleting());
      }
      if (deletion?.waiting) return this.waitToDelete(mr, cached, deletion.waiting, signal);
      if (deletion?.requested !== false) this.o.recorder.normal(mr, Reasons.DeletedExternalResource, 'Deleted the external resource');
      if (!deletion?.gone) {
        this.setConditions(mr, Ready.deleting(), Synced.success());
        await this.writeStatus(mr, cached, signal);
        return requeue(); // the next pass confirms it is gone
      }
    }
    return this.letGo(mr, signal);
  }

  /** Its deletion waits for something else to go first: said once (Event) and in Synced; what it waits for wakes it. */
  private async waitToDelete(
    mr: MR,
    cached: Cached<MR>,
    waiting: { reason: Reason; message: string },
    signal: AbortSignal,
  ): Promise<Result> {
    if (!hasConditionReason(mr, 'Synced', waiting.reason)) this.o.recorder.warning(mr, waiting.reason, waiting.message);
    this.setConditions(mr, Ready.deleting(), Synced.error(waiting.reason, waiting.message));
    await this.writeStatus(mr, cached, signal);
    return this.poll();
  }

  /** Not deleting: publish what observe found, then create, or record what observe asked and repair drift. */
  private async publishAndConverge(
    mr: MR,
    cached: Cached<MR>,
    { external, observation, policy }: Seen<MR> & { policy: Policy },
    signal: AbortSignal,
  ): Promise<Result> {
    try {
      await this.publish(mr, observation.connectionDetails, signal);
    } catch (err) {
      return this.fail({ mr, cached, signal }, 'publish', err);
    }
    // Crash-safe: the attempt is recorded before the external write, its outcome after (creation.ts).
    if (!observation.exists) return createExternal(this.steps, mr, cached, external, signal);
    // After the publish: a rotation's record says its new keys were published from then on.
    const stopped = await this.persistObserved(mr, cached, observation, signal);
    if (stopped) return stopped;
    // Drift is left as it is where the policies do not include Update (it is still reported as Synced).
    if (observation.upToDate || !policy.update) {
      this.lastUpToDate.set(mr.metadata.uid ?? '', this.o.now().getTime());
      this.setConditions(mr, Synced.success());
      return this.poll(observation.recheckAfterMs, await this.writeStatus(mr, cached, signal), mr);
    }
    return this.repair(mr, cached, { external, observation }, signal);
  }

  /**
   * What an existing external resource asks of the managed resource: the finalizer, late-initialized
   * fields and annotations (what proves its external resource), in one write. The finalizer alone is
   * a JSON patch; with anything else it rides in that update (conditional on the resourceVersion).
   * Updates `mr` in place; a Result means the pass stops there.
   */
  private async persistObserved(
    mr: MR,
    cached: Cached<MR>,
    observation: ExternalObservation,
    signal: AbortSignal,
  ): Promise<Result | undefined> {
    const finalizerMissing = !hasFinalizer(mr.metadata, FINALIZER_MANAGED);
    const annotate = Object.entries(observation.annotations ?? {}).filter(([k, v]) => mr.metadata.annotations?.[k] !== v);
    if (!finalizerMissing && !observation.lateInitialized && !annotate.length) return undefined;
    try {
      if (!observation.lateInitialized && !annotate.length) {
        const patched = await addFinalizer(this.o.client, this.o.type, mr, FINALIZER_MANAGED, signal);
        mr.metadata = patched.metadata;
        return undefined;
      }
      if (finalizerMissing) mr.metadata.finalizers = withFinalizer(mr.metadata, FINALIZER_MANAGED);
      if (annotate.length) mr.metadata.annotations = { ...mr.metadata.annotations, ...Object.fromEntries(annotate) };
      const updated = await this.update(mr, signal);
      mr.metadata = updated.metadata;
      mr.spec = updated.spec;
    } catch (err) {
      return this.fail({ mr, cached, signal }, finalizerMissing ? 'addFinalizer' : 'updateManaged', err);
    }
    // Late init only copied what the target holds, so this pass's observation holds for the new
    // generation too; stamping the old one would cost another status write on the next poll.
    if (observation.lateInitialized)
      mr.status = { ...mr.status, conditions: mr.status?.conditions?.map((c) => ({ ...c, observedGeneration: mr.metadata.generation })) };
    return undefined;
  }

  /**
   * What an update made that the resource must record (what proves an object made again), re-read and
   * retried on conflicts: until it is recorded, the record names the object it replaced.
   */
  private async recordMade(
    mr: MR,
    cached: Cached<MR>,
    annotations: Record<string, string> | undefined,
    signal: AbortSignal,
  ): Promise<Result | undefined> {
    if (!annotations || Object.entries(annotations).every(([k, v]) => mr.metadata.annotations?.[k] === v)) return undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        const updated = await this.update(
          { ...mr, metadata: { ...mr.metadata, annotations: { ...mr.metadata.annotations, ...annotations } } },
          signal,
        );
        mr.metadata = updated.metadata;
        mr.spec = updated.spec;
        return undefined;
      } catch (err) {
        const fresh =
          isConflict(err) && attempt < 4
            ? await this.o.client.get<MR>(this.o.type, { namespace: mr.metadata.namespace, name: mr.metadata.name }, signal)
            : undefined;
        if (!fresh) return this.fail({ mr, cached, signal }, 'recordMade', err);
        mr.metadata = fresh.metadata;
        mr.spec = fresh.spec;
      }
    }
  }

  /** The external resource drifted: update it, publish again, poll. */
  private async repair(mr: MR, cached: Cached<MR>, { external, observation }: Seen<MR>, signal: AbortSignal): Promise<Result> {
    this.o.log.debug('external resource drifted; updating', {
      resource: keyOf(mr.metadata),
      diff: observation.diff,
    });
    // Once per drift: a repair that fails and retries is not measured again.
    const uid = mr.metadata.uid ?? '';
    const upToDateAt = this.lastUpToDate.get(uid);
    if (upToDateAt !== undefined) managedMetrics.drift.observe(this.gvk, (this.o.now().getTime() - upToDateAt) / 1000);
    this.lastUpToDate.delete(uid);
    let updated;
    try {
      updated = await external.update(mr, signal);
    } catch (err) {
      if (!(err instanceof RecordedError)) return this.fail({ mr, cached, signal }, 'update', err);
      const stopped = await this.recordMade(mr, cached, err.annotations, signal);
      return stopped ?? this.fail({ mr, cached, signal }, 'update', err.cause);
    }
    const stopped = await this.recordMade(mr, cached, updated.annotations, signal);
    if (stopped) return stopped;
    try {
      await this.publish(mr, updated.connectionDetails, signal);
    } catch (err) {
      return this.fail({ mr, cached, signal }, 'publish', err);
    }
    this.o.recorder.normal(
      mr,
      Reasons.UpdatedExternalResource,
      observation.diff ? `Updated the external resource (${observation.diff})` : 'Updated the external resource',
    );
    this.setConditions(mr, Synced.success());
    return this.poll(observation.recheckAfterMs, await this.writeStatus(mr, cached, signal), mr);
  }

  private async publish(mr: MR, details: ConnectionDetails | undefined, signal: AbortSignal): Promise<void> {
    const ref = mr.spec.writeConnectionSecretToRef;
    if (!ref || !details || Object.keys(details).length === 0) return;
    await publishSecret(this.secretsAt(signal), mr, { namespace: mr.metadata.namespace!, name: ref.name }, details);
  }

  private async unpublish(mr: MR, signal: AbortSignal): Promise<void> {
    const ref = mr.spec.writeConnectionSecretToRef;
    if (ref) await unpublishSecret(this.secretsAt(signal), mr, { namespace: mr.metadata.namespace!, name: ref.name });
  }

  private secretsAt(signal: AbortSignal): SecretsAccess {
    return { client: this.o.client, cache: this.o.secrets, signal };
  }
}

function hasConditionReason(mr: ManagedResource, type: string, reason: Reason): boolean {
  return getCondition(mr.status?.conditions, type)?.reason === reason;
}
