// setupNativeManaged: registers a managed kind whose external resource is an object in a target
// cluster, after controller-runtime's builder: the managed controller, its scheduler, drift watches
// in every target, leak sweeping and operator install.
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { getCondition } from '../../kit/conditions.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Manager } from '../../kit/controller/manager.ts';
import { connectionSecrets, type SecretObject } from '../managed/publisher.ts';
import { ManagedReconciler } from '../managed/reconciler.ts';
import type { ManagedResource } from '../managed/types.ts';
import { FINALIZER_MANAGED, hasFinalizer } from '../../kit/meta.ts';
import { kindName } from '../../kit/controller/names.ts';
import { desiredStateChanged } from '../../kit/controller/predicates.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { needsScheduler, Scheduler } from '../scheduling/scheduler.ts';
import { NativeConnecter, namespacesUsed, refusedNamespace } from '../native/connecter.ts';
import type { NativeKind } from '../native/kind.ts';
import { LeakSweeper } from '../native/leaks.ts';
import type { OperatorInstaller } from '../operators/operator.ts';
import type { ProviderSystem } from './provider-system.ts';
import type { Backend } from './backend.ts';
import { TargetWatches } from '../native/watches.ts';
import type { NativeExternalOptions } from '../native/pass.ts';
import { Reasons } from '../reasons.ts';
import { policyOf } from '../managed/policies.ts';
import { gvkLabel, observeManagedKind } from '../managed-metrics.ts';
import { onChange } from '../../kit/controller/handlers.ts';

/** What every part of one managed kind's wiring shares. */
interface Wiring<MR extends ManagedResource> {
  manager: Manager;
  system: ProviderSystem;
  type: ResourceType;
  kind: NativeKind<MR>;
  cache: Informer<MR>;
  installer?: OperatorInstaller;
  /**
   * Which target each resource last connected through, so a target's return requeues its
   * resources, and the key there of the object it imports, if it does.
   */
  targetOf: Map<string, { fingerprint: string; imports?: string }>;
  /** Why the keys a rotation replaced must keep working past their grace period (see NativeExternalOptions). */
  retirementHold?: (mr: ManagedResource) => string | undefined;
}

/** The managed controller, its reconciler and the connection Secrets it publishes. */
interface Managed<MR extends ManagedResource> {
  controller: Controller;
  reconciler: ManagedReconciler<MR>;
  secrets: Informer<SecretObject>;
}

/** A backend served: its managed kind registered as a native kind. Its class's claims are set up with every backend's (claims/setup.ts). */
export function registerBackend(
  manager: Manager,
  system: ProviderSystem,
  backend: Backend,
  o: { retirementHold?: (mr: ManagedResource) => string | undefined } = {},
): { controller: Controller; cache: Informer<ManagedResource> } {
  return setupNativeManaged(manager, system, { type: backend.managed, kind: backend.native, retirementHold: o.retirementHold });
}

export function setupNativeManaged<MR extends ManagedResource>(
  manager: Manager,
  system: ProviderSystem,
  o: { type: ResourceType; kind: NativeKind<MR>; retirementHold?: (mr: ManagedResource) => string | undefined },
): { controller: Controller; cache: Informer<MR> } {
  const { type, kind } = o;
  const w: Wiring<MR> = {
    manager,
    system,
    type,
    kind,
    retirementHold: o.retirementHold,
    cache: manager.informer<MR>(type),
    installer: kind.operator ? system.installerFor(kind.operator) : undefined,
    targetOf: new Map<string, { fingerprint: string; imports?: string }>(),
  };
  const managed = managedController(w);
  const scheduler = schedulerController(w);
  watchManaged(w, managed, scheduler);
  watchEndpointSources(w, managed.controller);
  // A store is deleted after what lives in it; their going wakes it.
  system.storeUsers.addStore(type, managed.controller);
  if (kind.endpointFrom) system.storeUsers.addUsers(type, w.cache as unknown as Informer<ManagedResource>, kind.endpointFrom);
  joinProviderSystem(w, managed.controller);
  return { controller: managed.controller, cache: w.cache };
}

/** The managed controller: its reconciler reaches targets through the Providers (NativeConnecter). */
function managedController<MR extends ManagedResource>(w: Wiring<MR>): Managed<MR> {
  const { manager, system, type, kind, cache, installer, targetOf } = w;
  const { log, recorder } = manager;
  const { marks, resolver, opts } = system;
  const secrets = connectionSecrets(manager);
  const reconciler = new ManagedReconciler<MR>({
    type,
    client: manager.control,
    cache: cache.reader,
    recorder,
    log,
    secrets,
    connecter: new NativeConnecter(resolver, kind, marks, {
      installer,
      recorder,
      // The Provider's status says at once that the operator is there now (installed, or found), or gone.
      operatorChanged: (p) => system.recheck(p.metadata),
      connected: (key, target, imports) => targetOf.set(key, { fingerprint: target.fingerprint, imports }),
      managed: endpointSources(w),
      retirementHold: w.retirementHold,
      usedBy: (mr, signal) => system.storeUsers.of(type, mr, signal),
      stillHeld: async (mr, signal) => {
        const live = await manager.control.get<ManagedResource>(type, { namespace: mr.metadata.namespace, name: mr.metadata.name }, signal);
        return live !== undefined && live.metadata.uid === mr.metadata.uid && hasFinalizer(live.metadata, FINALIZER_MANAGED);
      },
    }),
    pollIntervalMs: opts.pollIntervalMs,
    pollJitterMs: opts.pollJitterMs,
    // A Kubernetes API is read-your-writes consistent: a missing object right after create is drift.
    creationGraceMs: 0,
  });
  const controller = manager.controller(`managed/${kindName(type)}`, reconciler);
  return { controller, reconciler, secrets };
}

const endpointOf = (mr: ReadonlyDeep<ManagedResource>): unknown =>
  (mr.status as { atProvider?: { endpoint?: unknown } } | undefined)?.atProvider?.endpoint;

/** Reads of the managed resources this kind's endpoints come from (NativeKind.endpointFrom), from caches. */
function endpointSources<MR extends ManagedResource>(w: Wiring<MR>): NativeExternalOptions['managed'] {
  const from = w.kind.endpointFrom;
  if (!from) return undefined;
  const caches = new Map(from.types.map((t) => [kindName(t), w.manager.informer<ManagedResource>(t)]));
  return { get: (type, key) => caches.get(kindName(type))?.get(key) };
}

/**
 * A store that stops (or starts again) lending its endpoint wakes the resources whose endpoint is its:
 * it can no longer prove it, or it is only observed (so provider-rook made no endpoint for it); and
 * so does a store whose endpoint changed (its cluster's domain, say).
 */
function watchEndpointSources<MR extends ManagedResource>(w: Wiring<MR>, controller: Controller): void {
  const from = w.kind.endpointFrom;
  if (!from) return;
  const unproven = (mr: ReadonlyDeep<ManagedResource>): boolean => {
    const ready = getCondition(mr.status?.conditions, 'Ready');
    return (
      policyOf(mr.spec as { managementPolicies?: string[] }).onlyObserve ||
      (ready?.status === 'False' && ready.reason === Reasons.EndpointNotProven)
    );
  };
  for (const type of from.types) {
    const storeChanged = (store: ReadonlyDeep<ManagedResource>): void => {
      for (const mr of w.cache.list()) {
        const ref = from.of(mr);
        if (
          ref &&
          kindName(ref.type) === kindName(type) &&
          ref.name === store.metadata.name &&
          mr.metadata.namespace === store.metadata.namespace
        )
          controller.enqueue(keyOf(mr.metadata));
      }
    };
    onChange(w.manager.informer<ManagedResource>(type), storeChanged, {
      on: ['updated'],
      when: (old, store) => unproven(old) !== unproven(store) || endpointOf(old) !== endpointOf(store),
    });
  }
}

/** A resource naming providerSelector waits for the scheduler to give it a Provider. */
function schedulerController<MR extends ManagedResource>(w: Wiring<MR>): Controller {
  const { manager, system, type, kind, cache } = w;
  const scheduler = manager.controller(
    `scheduler/${kindName(type)}`,
    new Scheduler<MR>({
      type,
      client: manager.control,
      cache: cache.reader,
      providers: system.providers,
      usage: system.usage,
      reservations: system.reservations,
      operator: kind.operator ? { name: kind.operator.name, legacy: kind.operator.legacy } : undefined,
      refusedNamespace: (provider, mr) => refusedNamespace(provider, namespacesUsed(kind, system.marks, mr)),
      recorder: manager.recorder,
      recheckMs: system.opts.providerPollMs,
    }),
  );
  const unscheduledIn = (namespace: string | undefined): void => {
    for (const mr of cache.list()) if (mr.metadata.namespace === namespace && needsScheduler(mr)) scheduler.enqueue(keyOf(mr.metadata));
  };
  // A Provider that appears, changes (labels, capacity, reachability, operators) or goes, and a place
  // freed, may let a waiting resource be placed.
  onChange(system.providers, (p) => unscheduledIn(p.metadata.namespace));
  system.usage.onFreed((mr) => unscheduledIn(mr.metadata.namespace));
  return scheduler;
}

/** The managed kind's cache and its connection Secrets wake the managed controller and the scheduler. */
function watchManaged<MR extends ManagedResource>(w: Wiring<MR>, managed: Managed<MR>, scheduler: Controller): void {
  const { type, cache, targetOf } = w;
  const { controller, reconciler, secrets } = managed;
  // Only changes a user makes (spec, labels, annotations, deletion) wake it; our status writes do not.
  cache.on({
    added: (mr) => {
      controller.enqueue(keyOf(mr.metadata));
      if (needsScheduler(mr)) scheduler.enqueue(keyOf(mr.metadata));
    },
    updated: (old, mr) => {
      if (desiredStateChanged(old, mr)) controller.enqueue(keyOf(mr.metadata));
      if (needsScheduler(mr)) scheduler.enqueue(keyOf(mr.metadata));
    },
    deleted: (mr) => {
      targetOf.delete(keyOf(mr.metadata));
      reconciler.forget(mr.metadata.uid);
    },
  });
  // A connection Secret that goes (deleted by hand, or by the garbage collector after a restore, as
  // its controller's uid is gone) is written again at once, not at the next poll.
  const secretGone = (s: ReadonlyDeep<SecretObject>): void => {
    const owner = s.metadata.ownerReferences?.find((r) => r.controller);
    const key = owner?.kind === type.kind && owner.name ? { namespace: s.metadata.namespace, name: owner.name } : undefined;
    if (key && cache.get(key)) controller.enqueue(keyOf(key));
  };
  onChange(secrets, secretGone, { on: ['deleted'] });
}

/** The Provider system's parts for this kind: registration, metrics, drift watches in every target, the leak sweeper. */
function joinProviderSystem<MR extends ManagedResource>(w: Wiring<MR>, controller: Controller): void {
  const { manager, system, type, kind, cache, installer, targetOf } = w;
  const { log, recorder } = manager;
  const { marks, resolver, opts } = system;
  const usedBy = function* (fingerprint: string): Iterable<string> {
    for (const [key, used] of targetOf) if (used.fingerprint === fingerprint) yield key;
  };
  const importing = function* (fingerprint: string, targetKey: string): Iterable<string> {
    for (const [key, used] of targetOf) if (used.imports === targetKey && used.fingerprint === fingerprint) yield key;
  };
  system.registerKind({ type, cache: cache as unknown as Informer<ManagedResource>, installer });
  // crossplane_managed_resource_{exists,ready,synced}, counted from the cache at each scrape.
  manager.cleanups.push(observeManagedKind(gvkLabel(type), () => cache.list()));
  system.targets.addHooks(new TargetWatches(kind, marks, (key) => controller.enqueue(key), log, { usedBy, importing }));
  system.addSweeper(
    new LeakSweeper<MR>({
      kind,
      marks,
      resolver,
      providers: system.providers,
      control: manager.control,
      managedType: type,
      cache,
      namespaces: manager.opts.namespaces,
      graceMs: opts.leakGraceMs ?? 5 * 60_000,
      reportOnly: opts.leakReportOnly ?? false,
      recorder,
      log,
    }) as unknown as LeakSweeper<ManagedResource>,
  );
}
