// The two ways to register a kind on the manager, after controller-runtime's builder:
// - setupNativeManaged: a managed kind whose external resource is an object in a target cluster
//   (managed controller, drift watches, leak sweeping, operator install);
// - setupClaim: a claim kind with its portable class and default-class policy, served by one claim
//   controller per non-portable class kind (crossplane's claim era: EnqueueRequestForClaim and
//   class-kind predicates decide which controller a change wakes).
import { ClaimReconciler } from './claims/binding.ts';
import type { Claim, ObjectReference, PortableClass } from './claims/claim.ts';
import { DefaultClassReconciler } from './claims/defaulting.ts';
import type { Controller } from './controller.ts';
import type { Informer } from './informer.ts';
import type { KubeObjectLike } from './kube/client.ts';
import { Secrets, type ResourceType } from './kube/resources.ts';
import type { Manager } from './manager.ts';
import type { SecretObject } from './managed/publisher.ts';
import { ManagedReconciler } from './managed/reconciler.ts';
import type { ManagedResource } from './managed/types.ts';
import { CONNECTION_SECRET_TYPE } from './meta.ts';
import { NativeConnecter } from './native/connecter.ts';
import type { NativeKind } from './native/external.ts';
import { LeakSweeper } from './native/leaks.ts';
import { TargetWatches } from './native/watches.ts';
import { desiredStateChanged } from './predicates.ts';
import { sameJson } from './json.ts';
import { gvkLabel, observeManagedKind } from './metrics.ts';
import { keyOf } from './result.ts';
import { needsScheduler, Scheduler } from './scheduling/scheduler.ts';

// Only connection Secrets: caching every Secret of the cluster would cost memory and trust.
const connectionSecrets = (manager: Manager): Informer<SecretObject> => manager.informer<SecretObject>(Secrets, { fieldSelector: `type=${CONNECTION_SECRET_TYPE}` });

const group = (type: ResourceType): string => type.apiVersion.split('/')[0]!;
/** controller-runtime's controller names: "<kind>.<group>", lower case. */
const kindName = (type: ResourceType): string => `${type.kind.toLowerCase()}.${group(type)}`;

export function setupNativeManaged<MR extends ManagedResource>(manager: Manager, o: { type: ResourceType; kind: NativeKind<MR> }): { controller: Controller; cache: Informer<MR> } {
  const { type, kind } = o;
  const { log, marks, recorder, resolver, opts } = manager;
  const cache = manager.informer<MR>(type);
  const installer = kind.operator ? manager.installerFor(kind.operator) : undefined;
  // Which target each resource last connected through, so a target's return requeues its resources.
  const targetOf = new Map<string, string>();
  const usedBy = function* (fingerprint: string): Iterable<string> {
    for (const [key, fp] of targetOf) if (fp === fingerprint) yield key;
  };
  const secrets = connectionSecrets(manager);
  const reconciler = new ManagedReconciler<MR>({
    type, client: manager.control, cache, recorder, log, secrets,
    connecter: new NativeConnecter(resolver, kind, marks, {
      installer, recorder,
      // The Provider's status says at once that the operator is there now (installed, or found), or gone.
      operatorChanged: (p) => manager.providerController.enqueue(keyOf(p.metadata)),
      connected: (key, target) => targetOf.set(key, target.fingerprint),
    }),
    pollIntervalMs: opts.pollIntervalMs, pollJitterMs: opts.pollJitterMs,
    // A Kubernetes API is read-your-writes consistent: a missing object right after create is drift.
    creationGraceMs: 0,
  });
  const controller = manager.controller(`managed/${kindName(type)}`, reconciler);
  // A resource naming providerSelector waits for the scheduler to give it a Provider.
  const scheduler = manager.controller(`scheduler/${kindName(type)}`, new Scheduler<MR>({
    type, client: manager.control, cache, providers: manager.providers, usage: manager.usage, reservations: manager.reservations,
    operator: kind.operator ? { name: kind.operator.name, legacy: kind.operator.legacy } : undefined,
    recorder, recheckMs: opts.pollIntervalMs,
  }));
  const unscheduledIn = (namespace: string | undefined): void => {
    for (const mr of cache.list()) if (mr.metadata.namespace === namespace && needsScheduler(mr)) scheduler.enqueue(keyOf(mr.metadata));
  };
  // A Provider that appears, changes (labels, capacity, reachability, operators) or goes, and a place
  // freed, may let a waiting resource be placed.
  manager.providers.on({ added: (p) => unscheduledIn(p.metadata.namespace), updated: (_, p) => unscheduledIn(p.metadata.namespace), deleted: (p) => unscheduledIn(p.metadata.namespace) });
  manager.usage.onFreed((mr) => unscheduledIn(mr.metadata.namespace));

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
  secrets.on({
    deleted: (s) => {
      const owner = s.metadata.ownerReferences?.find((r) => r.controller);
      if (owner?.kind === type.kind && cache.get(`${s.metadata.namespace}/${owner.name}`)) controller.enqueue(`${s.metadata.namespace}/${owner.name}`);
    },
  });
  manager.registerKind({ type, cache: cache as unknown as Informer<ManagedResource>, installer });
  // crossplane_managed_resource_{exists,ready,synced}, counted from the cache at each scrape.
  manager.cleanups.push(observeManagedKind(gvkLabel(type), () => cache.list()));
  manager.targets.addHooks(new TargetWatches(kind, marks, (key) => controller.enqueue(key), log, usedBy));
  manager.sweepers.push(new LeakSweeper<MR>({
    kind, marks, resolver, providers: manager.providers, control: manager.control, managedType: type, cache, namespaces: opts.namespaces,
    graceMs: opts.leakGraceMs ?? 5 * 60_000, reportOnly: opts.leakReportOnly ?? false, recorder, log,
  }) as unknown as LeakSweeper<ManagedResource>);
  return { controller, cache };
}

/** A non-portable class kind, the managed kind made from it, and how (the backend's part). */
export interface ClassBinding<C extends KubeObjectLike, MR extends ManagedResource> {
  class: ResourceType;
  managed: ResourceType;
  configure(claim: Claim, cls: C, name: string): MR;
}

export interface ClaimSetup {
  claim: ResourceType;
  portableClass: ResourceType;
  policy: ResourceType;
  // Each binding has its own class and managed types; the list mixes them.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  classes: ClassBinding<any, any>[];
}

export function setupClaim(manager: Manager, o: ClaimSetup): { defaulting: Controller; binding: Controller[] } {
  const { log, recorder } = manager;
  const client = manager.control;
  const claims = manager.informer<Claim>(o.claim);
  const portable = manager.informer<PortableClass>(o.portableClass);
  const policies = manager.informer<KubeObjectLike & { spec?: { defaultClassRef?: { name: string } } }>(o.policy);
  const secrets = connectionSecrets(manager);
  const claimName = kindName(o.claim);

  const defaulting = manager.controller(`defaultclass/${claimName}`, new DefaultClassReconciler({
    client, claims: { type: o.claim, cache: claims }, policies: { type: o.policy, cache: policies }, recorder,
  }));
  const bindings = o.classes.map((b, i) => {
    const classCache = manager.informer<KubeObjectLike>(b.class);
    const managedCache = manager.informer<ManagedResource>(b.managed);
    const controller = manager.controller(`claimbinding/${claimName}/${kindName(b.managed)}`, new ClaimReconciler({
      client, recorder, log, secrets, configure: b.configure, providers: manager.providers,
      claims: { type: o.claim, cache: claims }, portableClasses: { type: o.portableClass, cache: portable },
      classes: { type: b.class, cache: classCache }, managed: { type: b.managed, cache: managedCache },
      servedClasses: o.classes.map((c) => c.class), reportsUnserved: i === 0,
    }));
    return { ...b, controller, classCache, managedCache };
  });
  const everyClaimController = (key: string): void => { for (const b of bindings) b.controller.enqueue(key); };

  // A claim wakes its default and claim controllers; each claim controller takes only its own kind.
  claims.on({
    added: (c) => { defaulting.enqueue(keyOf(c.metadata)); everyClaimController(keyOf(c.metadata)); },
    updated: (old, c) => { if (desiredStateChanged(old, c)) { defaulting.enqueue(keyOf(c.metadata)); everyClaimController(keyOf(c.metadata)); } },
  });
  for (const b of bindings) {
    // EnqueueRequestForClaim: a managed resource wakes the claim it names, in its own kind's controller.
    const claimOf = (ref: ObjectReference | undefined): void => {
      if (ref?.kind === o.claim.kind && ref.namespace) b.controller.enqueue(`${ref.namespace}/${ref.name}`);
    };
    b.managedCache.on({
      added: (mr) => claimOf(mr.spec.claimRef as ObjectReference | undefined),
      updated: (old, mr) => { claimOf(old.spec.claimRef as ObjectReference | undefined); claimOf(mr.spec.claimRef as ObjectReference | undefined); },
      deleted: (mr) => claimOf(mr.spec.claimRef as ObjectReference | undefined),
    });
    // A class that appears or changes retries the unbound claims whose portable class points at it.
    const classChanged = (cls: KubeObjectLike): void => {
      const pointing = portable.list().filter((pc) => pc.classRef?.kind === b.class.kind && pc.classRef.name === cls.metadata.name && pc.classRef.namespace === cls.metadata.namespace);
      for (const c of claims.list()) {
        if (c.status?.bindingPhase !== 'Bound' && pointing.some((pc) => usesPortable(pc)(c))) b.controller.enqueue(keyOf(c.metadata));
      }
    };
    b.classCache.on({ added: classChanged, updated: (_, cls) => classChanged(cls) });
  }

  // A connection Secret wakes the claim that copies it (or owns the copy).
  const secretChanged = (s: SecretObject): void => {
    const owner = s.metadata.ownerReferences?.find((r) => r.controller) as { kind?: string; name: string } | undefined;
    if (!owner) return;
    if (owner.kind === o.claim.kind) everyClaimController(`${s.metadata.namespace}/${owner.name}`);
    for (const b of bindings) {
      if (owner.kind !== b.managed.kind) continue;
      const ref = b.managedCache.get(`${s.metadata.namespace}/${owner.name}`)?.spec.claimRef as ObjectReference | undefined;
      if (ref?.namespace) b.controller.enqueue(`${ref.namespace}/${ref.name}`);
    }
  };
  secrets.on({ added: secretChanged, updated: (_, s) => secretChanged(s), deleted: secretChanged });

  // A claim whose selector its class's one Provider did not match is retried when Providers change.
  const selectiveClaims = (): void => {
    for (const c of claims.list()) if (c.spec?.providerSelector && !c.spec.resourceRef) everyClaimController(keyOf(c.metadata));
  };
  manager.providers.on({ added: selectiveClaims, updated: (old, p) => { if (!sameJson(old.metadata.labels, p.metadata.labels)) selectiveClaims(); }, deleted: selectiveClaims });

  // A claim waiting for a default, or for its portable class, is retried when that changes.
  const unclassedIn = (ns: string | undefined): void => {
    for (const c of claims.list()) if (c.metadata.namespace === ns && !c.spec?.classRef) defaulting.enqueue(keyOf(c.metadata));
  };
  policies.on({ added: (p) => unclassedIn(p.metadata.namespace), updated: (_, p) => unclassedIn(p.metadata.namespace), deleted: (p) => unclassedIn(p.metadata.namespace) });
  const portableChanged = (pc: PortableClass): void => {
    for (const c of claims.list()) if (c.status?.bindingPhase !== 'Bound' && usesPortable(pc)(c)) everyClaimController(keyOf(c.metadata));
  };
  portable.on({ added: portableChanged, updated: (_, pc) => portableChanged(pc) });

  return { defaulting, binding: bindings.map((b) => b.controller) };
}

const usesPortable = (pc: PortableClass) => (c: Claim): boolean => c.metadata.namespace === pc.metadata.namespace && c.spec?.classRef?.name === pc.metadata.name;
