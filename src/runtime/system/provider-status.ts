// Keeps each Provider's status honest (can we reach its target, what version does it run, how many
// managed resources use it) and protects a Provider in use: it keeps a finalizer until no managed
// resource names it, so deleting it never strands resources behind their own finalizers.
// Status echoes nothing read from the Provider's Secret: the Secret may be someone else's.
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import { copyOf } from '../../kit/controller/informer.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError, getCondition, setCondition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict, isNotFound } from '../../kit/kube/errors.ts';
import { sameJson } from '../../kit/json.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import { addFinalizer, removeFinalizer } from '../../kit/controller/finalizers.ts';
import { hasFinalizer, isDeleting } from '../../kit/meta.ts';
import { done, keyOf, requeue, requeueAfter, type Reconciler, type Result } from '../../kit/controller/result.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import type { Manager } from '../../kit/controller/manager.ts';
import { installRefusal, type OperatorInstaller } from '../operators/operator.ts';
import { reconcileVersion, ROLLOUT_STALLED } from '../operators/upgrade.ts';
import { operatorSettings, Providers, type OperatorStatus, type ProviderObject } from '../providers/provider.ts';
import { ProgressWrites } from '../progress.ts';
import { Reasons, reasonOf, Synced, reported } from '../reasons.ts';
import { type ProviderResolver } from '../providers/resolver.ts';
import { enqueueOnChange } from '../../kit/controller/handlers.ts';
import type { TargetInformers } from '../providers/target-informers.ts';

export { Providers };

/** How often a rolling operator upgrade is looked at. */
const UPGRADE_POLL_MS = 2_000;
/** How often one whose rollout passed its deadline is: the cause may go at any time, and a wave waits on it. */
const FAILED_UPGRADE_POLL_MS = 10_000;
/**
 * How often a Provider that is not Ready is judged again. Its target's watches wake it when they first
 * fail and when they all work again, not in between: a first judgement taken mid-failure (a reset
 * connection, where the next one is refused by address) would otherwise stand until the next poll.
 */
const NOT_READY_POLL_MS = 10_000;
type Provider = ProviderObject;

/** Crossplane's ProviderConfig usage finalizer, for our Provider. */
export const FINALIZER_PROVIDER_IN_USE = 'in-use.kubernetes.crossplane.io';

export interface ProviderUsers {
  /** How many managed resources name the Provider, from the caches (for status). */
  cached(key: Required<ObjectKey>): number;
  /** The same, read live: the only count trusted to let a Provider go. */
  live(key: Required<ObjectKey>, signal: AbortSignal): Promise<number>;
}

export interface ProviderStatusOptions {
  client: Client;
  cache: Pick<Informer<Provider>, 'get'>;
  resolver: ProviderResolver;
  users: ProviderUsers;
  recorder: EventRecorder;
  pollIntervalMs: number;
  /** The operators of every registered kind: each one's presence is reported. */
  operators: () => OperatorInstaller[];
  /** The clock (tests move it). */
  now?: () => number;
}

export class ProviderStatusReconciler implements Reconciler {
  private readonly o: ProviderStatusOptions;

  /** A change of the user count alone is written at most once per window: a burst of claims moves it with every one. */
  private readonly progress = new ProgressWrites();

  /** The Providers each target's watches serve: a watch that fails or recovers wakes them (their reachability). */
  private readonly served = new WeakMap<TargetInformers, Set<string>>();
  /** Set by setupProviderStatus: puts a Provider in the controller's queue. */
  wake?: (key: string) => void;

  constructor(opts: ProviderStatusOptions) {
    this.o = opts;
  }

  private follow(informers: TargetInformers, key: string): void {
    let keys = this.served.get(informers);
    if (!keys) {
      const wakeAll = (): void => {
        for (const k of keys!) this.wake?.(k);
      };
      informers.onHealth({ failed: wakeAll, recovered: wakeAll });
      this.served.set(informers, (keys = new Set()));
    }
    keys.add(key);
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.cache.get(key);
    if (!cached) return done();
    const provider = copyOf<Provider>(cached);
    try {
      if (isDeleting(provider.metadata)) return await this.release(provider, cached, signal);
      // v0.1's single-operator field still works; say where it belongs now.
      if (provider.spec.operatorInstall && !hasFinalizer(cached.metadata, FINALIZER_PROVIDER_IN_USE)) {
        this.o.recorder.normal(
          provider,
          Reasons.DeprecatedField,
          'spec.operatorInstall configures the Rook MinIO operator; move it to spec.operators as {name: rook-minio, install: ...}',
        );
      }
      if (!hasFinalizer(provider.metadata, FINALIZER_PROVIDER_IN_USE)) {
        // The next pass reads the status the server holds: the cached one, written with the patched
        // resourceVersion, would erase reservations a scheduler made meanwhile.
        await addFinalizer(this.o.client, Providers, provider, FINALIZER_PROVIDER_IN_USE, signal);
        return requeue();
      }
      const status = await this.observe(provider, signal);
      const deferred = await this.writeStatus(provider, cached, status, signal);
      // An operator's rollout is followed closely until it ends (its Deployment's changes do not wake this controller).
      if (status?.operators?.some((o) => o.upgrade?.phase === 'Progressing')) return requeueAfter(UPGRADE_POLL_MS);
      // A rollout past its deadline may recover by itself; a refused setting changes only with the Provider (a watch).
      const stalled = status?.operators?.some((o) => o.upgrade?.phase === 'Failed' && o.upgrade.reason === ROLLOUT_STALLED);
      if (stalled) return requeueAfter(Math.min(FAILED_UPGRADE_POLL_MS, this.o.pollIntervalMs));
      if (deferred) return requeueAfter(deferred);
      if (getCondition(status?.conditions, 'Ready')?.status === 'False')
        return requeueAfter(Math.min(NOT_READY_POLL_MS, this.o.pollIntervalMs));
    } catch (err) {
      if (isConflict(err)) return requeue();
      if (isNotFound(err)) return done();
      throw err;
    }
    return requeueAfter(this.o.pollIntervalMs);
  }

  private async observe(provider: Provider, signal: AbortSignal): Promise<Provider['status']> {
    const { namespace, name, generation } = provider.metadata;
    const base = { ...provider.status, users: this.o.users.cached({ namespace: namespace!, name }) };
    // Synced says whether every operator the Provider lets us install may be installed as it says: by
    // its spec alone, and (once its cluster answers) by what is there, someone else's operator say.
    const refused = this.o.operators().flatMap((i) => installRefusal(i.bundle, provider) ?? []);
    const syncedWith = (errs: ReasonedError[]) => {
      for (const err of errs) this.o.recorder.warning(provider, err.reason, err.message);
      const synced = errs.length ? Synced.error(reported(errs[0]!.reason), errs.map((e) => e.message).join('; ')) : Synced.success();
      return setCondition(provider.status?.conditions, { ...synced, observedGeneration: generation });
    };
    try {
      const target = await this.o.resolver.resolve(provider, signal);
      this.follow(target.informers, keyOf({ namespace, name }));
      // At rest the target's watches say it answers; the version is asked again only while they fail.
      if (!target.serverVersion || target.informers.reachable() === false) target.serverVersion = await target.client.serverVersion(signal);
      const { serverVersion } = target;
      const operators: OperatorStatus[] = [];
      for (const installer of this.o.operators()) {
        const { name, legacy } = installer.bundle;
        const p = await installer.presence(target, operatorSettings(provider, name, legacy), signal);
        const refusal = installer.refusal(p, provider);
        if (refusal && !refused.some((r) => r.message === refusal.message)) refused.push(refusal);
        const upgrade = await reconcileVersion(installer, target.client, provider, p, signal);
        operators.push({
          name,
          present: p.present,
          ...(p.installedBy ? { installedBy: p.installedBy } : {}),
          ...(p.missing.length ? { missing: p.missing } : {}),
          ...(p.version ? { version: p.version } : {}),
          ...(upgrade ? { upgrade } : {}),
        });
      }
      return {
        ...base,
        serverVersion,
        ...(operators.length ? { operators } : {}),
        conditions: setCondition(syncedWith(refused), {
          type: 'Ready',
          status: 'True',
          reason: Reasons.Reachable,
          message: 'reached the target cluster',
          observedGeneration: generation,
        }),
      };
    } catch (err) {
      const reason = err instanceof ReasonedError ? err.reason : reasonOf(err);
      return {
        ...base,
        conditions: setCondition(syncedWith(refused), {
          type: 'Ready',
          status: 'False',
          reason,
          message: (err as Error).message,
          observedGeneration: generation,
        }),
      };
    }
  }

  /** A Provider being deleted goes once a live count finds no managed resource using it. */
  private async release(provider: Provider, cached: ReadonlyDeep<Provider>, signal: AbortSignal): Promise<Result> {
    if (!hasFinalizer(provider.metadata, FINALIZER_PROVIDER_IN_USE)) return done();
    const { namespace, name } = provider.metadata;
    const users = await this.o.users.live({ namespace: namespace!, name }, signal);
    if (users > 0) {
      this.o.recorder.normal(
        provider,
        Reasons.DeletionBlocked,
        `${users} managed resource(s) still use this Provider; it is deleted once none does`,
      );
      const deferred = await this.writeStatus(provider, cached, { ...provider.status, users }, signal);
      return requeueAfter(deferred || this.o.pollIntervalMs);
    }
    await removeFinalizer(this.o.client, Providers, provider, FINALIZER_PROVIDER_IN_USE, signal);
    return done();
  }

  /** Writes a changed status; a change of the user count alone waits for its window, and how long is returned. */
  private async writeStatus(
    provider: Provider,
    cached: ReadonlyDeep<Provider>,
    status: Provider['status'],
    signal: AbortSignal,
  ): Promise<number> {
    if (sameJson(status, cached.status)) return 0;
    const key = keyOf(provider.metadata);
    const now = (this.o.now ?? Date.now)();
    const wait = this.progress.waitIf(key, sameJson({ ...status, users: cached.status?.users }, cached.status), now);
    if (wait > 0) return wait;
    await this.o.client.updateStatus(Providers, { ...provider, status }, signal);
    this.progress.wrote(key, now);
    return 0;
  }
}

/** The Provider controller: only changes a user makes (the spec, deletion) wake it; our own status writes do not. */
export function setupProviderStatus(
  manager: Manager,
  o: Omit<ProviderStatusOptions, 'client' | 'cache' | 'recorder'> & { providers: Informer<Provider> },
): Controller {
  const { providers, ...rest } = o;
  const reconciler = new ProviderStatusReconciler({ ...rest, client: manager.control, cache: providers, recorder: manager.recorder });
  const controller = manager.controller('provider', reconciler);
  reconciler.wake = (key) => controller.enqueue(key);
  enqueueOnChange(providers, controller, {
    on: ['added', 'updated'],
    when: (old, p) => old.metadata.generation !== p.metadata.generation || old.metadata.deletionTimestamp !== p.metadata.deletionTimestamp,
  });
  return controller;
}
