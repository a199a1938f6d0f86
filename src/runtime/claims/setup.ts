// setupClaim: registers a claim kind with its portable class and default-class policy, served by
// one claim controller per non-portable class kind, and one for the claims no kind serves
// (crossplane's claim era: EnqueueRequestForClaim and class-kind predicates decide which controller
// a change wakes). Every change is routed (routing.ts) before it is queued: one controller wakes.
import { getCondition } from '../../kit/conditions.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import { sameJson } from '../../kit/json.ts';
import type { KubeObjectLike } from '../../kit/kube/client.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Manager } from '../../kit/controller/manager.ts';
import { connectionSecrets, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { kindName } from '../../kit/controller/names.ts';
import { Providers, type ProviderObject } from '../providers/provider.ts';
import { desiredStateChanged } from '../../kit/controller/predicates.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { AccessReconciler, type AccessClaim, type Grantor } from './access.ts';
import { ClaimReconciler } from './binding.ts';
import { claimRefOf, type Claim, type DefaultClassPolicy, type Lookup, type PortableClass } from './claim.ts';
import { DefaultClassReconciler } from './defaulting.ts';
import { ClaimRouter } from './routing.ts';
import { UnservedClaimReconciler } from './unserved.ts';
import type { FeatureSupport } from './features.ts';
import { onChange, enqueueOnChange } from '../../kit/controller/handlers.ts';

/** A non-portable class kind, the managed kind made from it, and how (the backend's part). */
export interface ClassBinding<C extends KubeObjectLike, MR extends ManagedResource> {
  class: ResourceType;
  managed: ResourceType;
  configure(claim: Claim, cls: C, name: string, lookup: Lookup): MR;
  /** Kinds configure reads (served from caches of this manager). */
  lookups?: ResourceType[];
  /** The bucket features the backend has (none when unset: a claim asking for one is refused). */
  features?: FeatureSupport;
}

export interface ClaimSetup {
  claim: ResourceType;
  portableClass: ResourceType;
  policy: ResourceType;
  // Each binding has its own class and managed types; the list mixes them.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  classes: ClassBinding<any, any>[];
}

/** The shared caches the claim controllers read. */
interface Caches {
  claims: Informer<Claim>;
  portable: Informer<PortableClass>;
  policies: Informer<DefaultClassPolicy>;
  secrets: Informer<SecretObject>;
  providers: Informer<ProviderObject>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Served = ClassBinding<any, any> & {
  classCache: Informer<KubeObjectLike>;
  managedCache: Informer<ManagedResource>;
  lookupCaches: Informer<KubeObjectLike>[];
};

export function setupClaim(manager: Manager, o: ClaimSetup): { defaulting: Controller; binding: Controller[]; unserved: Controller } {
  const c: Caches = {
    claims: manager.informer<Claim>(o.claim),
    portable: manager.informer<PortableClass>(o.portableClass),
    policies: manager.informer<DefaultClassPolicy>(o.policy),
    secrets: connectionSecrets(manager),
    providers: manager.informer<ProviderObject>(Providers),
  };
  const defaulting = manager.controller(
    `defaultclass/${kindName(o.claim)}`,
    new DefaultClassReconciler({
      client: manager.control,
      claims: { type: o.claim, cache: c.claims },
      policies: { type: o.policy, cache: c.policies },
      recorder: manager.recorder,
    }),
  );
  const served: Served[] = o.classes.map((b) => ({
    ...b,
    classCache: manager.informer<KubeObjectLike>(b.class),
    managedCache: manager.informer<ManagedResource>(b.managed),
    lookupCaches: (b.lookups ?? []).map((t) => manager.informer<KubeObjectLike>(t)),
  }));
  const router = new ClaimRouter(served, c.portable);
  const { bindings, unserved } = claimControllers(manager, o, c, served, router);

  // The one controller a claim is for, or none.
  const route = (claim: ReadonlyDeep<Claim>): void => {
    const to = router.route(claim);
    (to === 'unserved' ? unserved : to === 'none' ? undefined : bindings[to])?.enqueue(keyOf(claim.metadata));
  };
  const routeKey = (key: string): void => {
    const claim = c.claims.get(key);
    if (claim) route(claim);
  };
  watchClaimInputs(c, defaulting, route);
  watchServedKinds(o.claim, c, served, route, routeKey);
  return { defaulting, binding: bindings, unserved };
}

/** One claim controller per served class kind (each takes the claims routed to it), and one for the claims no kind serves. */
function claimControllers(
  manager: Manager,
  o: ClaimSetup,
  c: Caches,
  served: Served[],
  router: ClaimRouter,
): { bindings: Controller[]; unserved: Controller } {
  const { log, recorder } = manager;
  const client = manager.control;
  const claimName = kindName(o.claim);
  const claims = { type: o.claim, cache: c.claims };
  const portableClasses = { type: o.portableClass, cache: c.portable };
  const bindings = served.map((b, i) =>
    manager.controller(
      `claimbinding/${claimName}/${kindName(b.managed)}`,
      new ClaimReconciler({
        client,
        recorder,
        log,
        secrets: c.secrets,
        configure: b.configure,
        lookup: lookupOf(manager, b.lookups ?? []),
        providers: c.providers,
        claims,
        portableClasses,
        classes: { type: b.class, cache: b.classCache },
        managed: { type: b.managed, cache: b.managedCache },
        takes: (claim) => router.route(claim) === i,
        ...(b.features ? { features: b.features } : {}),
      }),
    ),
  );
  const unserved = manager.controller(
    `claimbinding/${claimName}/unserved`,
    new UnservedClaimReconciler({ client, recorder, claims, portableClasses, served, router }),
  );
  return { bindings, unserved };
}

/** configure's reads, from caches of these kinds (one informer per kind, shared with whoever else reads it). */
function lookupOf(manager: Manager, types: ResourceType[]): Lookup {
  const caches = new Map(types.map((t) => [`${t.apiVersion}/${t.kind}`, manager.informer<KubeObjectLike>(t)]));
  return {
    get<T>(type: ResourceType, key: ObjectKey): T | undefined {
      const cache = caches.get(`${type.apiVersion}/${type.kind}`);
      if (!cache) throw new Error(`${type.kind} is not among the kinds this class binding reads`);
      return cache.get(key) as T | undefined;
    },
  };
}

/** A claim, its portable class, the Providers and the policies wake the controllers that read them. */
function watchClaimInputs(c: Caches, defaulting: Controller, route: (claim: ReadonlyDeep<Claim>) => void): void {
  // A claim wakes its default controller and the one claim controller it is for.
  const claimChanged = (claim: ReadonlyDeep<Claim>): void => {
    defaulting.enqueue(keyOf(claim.metadata));
    route(claim);
  };
  onChange(c.claims, claimChanged, { on: ['added', 'updated'], when: desiredStateChanged });
  // A claim whose selector its class's one Provider did not match is retried when Providers change.
  const selectiveClaims = (): void => {
    for (const claim of c.claims.list()) if (claim.spec?.providerSelector && !claim.spec.resourceRef) route(claim);
  };
  onChange(c.providers, selectiveClaims, { when: (old, p) => !sameJson(old.metadata.labels, p.metadata.labels) });
  // A claim waiting for a default, or for its portable class, is retried when that changes.
  const unclassedIn = (ns: string | undefined): void => {
    for (const claim of c.claims.list())
      if (claim.metadata.namespace === ns && !claim.spec?.classRef) defaulting.enqueue(keyOf(claim.metadata));
  };
  onChange(c.policies, (p) => unclassedIn(p.metadata.namespace));
  // Routed by the portable class as it now is: a claim that waited for it goes to its kind's controller.
  const portableChanged = (pc: PortableClass): void => {
    for (const claim of c.claims.list()) if (claim.status?.bindingPhase !== 'Bound' && usesPortable(pc)(claim)) route(claim);
  };
  onChange(c.portable, portableChanged, { on: ['added', 'updated'] });
}

/** Each served kind's classes and managed resources, and the connection Secrets, wake the claims they concern. */
function watchServedKinds(
  claimType: ResourceType,
  c: Caches,
  served: Served[],
  route: (claim: ReadonlyDeep<Claim>) => void,
  routeKey: (key: string) => void,
): void {
  for (const b of served) {
    // EnqueueRequestForClaim: a managed resource wakes the claim it names.
    const claimOf = (mr: ReadonlyDeep<ManagedResource>): void => {
      const ref = claimRefOf(mr);
      if (ref?.kind === claimType.kind && ref.namespace) routeKey(keyOf(ref));
    };
    onChange(b.managedCache, claimOf, { old: true });
    // A class that appears or changes retries the unbound claims whose portable class points at it.
    const classChanged = (cls: KubeObjectLike): void => {
      const pointing = c.portable
        .list()
        .filter(
          (pc) =>
            pc.classRef?.kind === b.class.kind &&
            pc.classRef.name === cls.metadata.name &&
            pc.classRef.namespace === cls.metadata.namespace,
        );
      for (const claim of c.claims.list())
        if (claim.status?.bindingPhase !== 'Bound' && pointing.some((pc) => usesPortable(pc)(claim))) route(claim);
    };
    onChange(b.classCache, classChanged, { on: ['added', 'updated'] });
    // A class's features changed: the bound claims of the resources it made follow them (their
    // claims are at rest otherwise, and would follow only at their next unrelated change).
    const featuresChanged = (cls: KubeObjectLike): void => {
      for (const mr of b.managedCache.list()) {
        const made = mr.spec.classRef as { name?: string; namespace?: string } | undefined;
        if (made?.name === cls.metadata.name && made.namespace === cls.metadata.namespace) claimOf(mr);
      }
    };
    const features = (cls: KubeObjectLike): unknown => (cls as { spec?: { features?: unknown } }).spec?.features;
    onChange(b.classCache, featuresChanged, { on: ['updated'], when: (old, cls) => !sameJson(features(old), features(cls)) });
    // What configure reads (a store a class shares) retries the unbound claims of this kind's classes when it changes.
    const readChanged = (): void => {
      const pointing = c.portable
        .list()
        .filter((pc) => pc.classRef?.kind === b.class.kind && pc.classRef.apiVersion === b.class.apiVersion);
      if (pointing.length === 0) return; // no claim can use this kind's classes: nothing to scan
      for (const claim of c.claims.list()) if (!claim.spec?.resourceRef && pointing.some((pc) => usesPortable(pc)(claim))) route(claim);
    };
    // Only what configure judges by (readiness, placement, deletion): a store's every status write is not news.
    const judged = (o: ManagedResource): unknown => [
      getCondition(o.status?.conditions, 'Ready')?.status,
      o.spec.providerRef,
      o.metadata.deletionTimestamp,
    ];
    for (const cache of b.lookupCaches)
      onChange(cache, readChanged, {
        on: ['added', 'updated'],
        when: (old, obj) => !sameJson(judged(old as ManagedResource), judged(obj as ManagedResource)),
      });
  }
  // A connection Secret wakes the claim that copies it (or owns the copy).
  const secretChanged = (s: ReadonlyDeep<SecretObject>): void => {
    const owner = s.metadata.ownerReferences?.find((r) => r.controller) as { kind?: string; name: string } | undefined;
    if (!owner) return;
    if (owner.kind === claimType.kind) routeKey(keyOf({ namespace: s.metadata.namespace, name: owner.name }));
    for (const b of served) {
      if (owner.kind !== b.managed.kind) continue;
      const ref = claimRefOf(b.managedCache.get({ namespace: s.metadata.namespace, name: owner.name }) ?? { spec: {} });
      if (ref?.namespace) routeKey(keyOf(ref));
    }
  };
  onChange(c.secrets, secretChanged);
}

const usesPortable =
  (pc: PortableClass) =>
  (c: ReadonlyDeep<Claim>): boolean =>
    c.metadata.namespace === pc.metadata.namespace && c.spec?.classRef?.name === pc.metadata.name;

export interface AccessSetup {
  access: ResourceType;
  claim: ResourceType;
  grantors: Grantor[];
}

/** The BucketAccess controller: woken by its claims, the Buckets they name, the grants' resources and their Secrets. */
export function setupAccess(manager: Manager, o: AccessSetup): Controller {
  const accesses = manager.informer<AccessClaim>(o.access);
  const buckets = manager.informer<Claim & { spec?: { shareWith?: { namespace: string }[] } }>(o.claim);
  const secrets = connectionSecrets(manager);
  const kinds = [...new Map(o.grantors.map((g) => [`${g.grants.apiVersion}/${g.grants.kind}`, g.grants])).values()];
  const granted = kinds.map((type) => ({ type, cache: manager.informer<ManagedResource>(type) }));
  const lentKinds = [...new Map(o.grantors.map((g) => [`${g.managed.apiVersion}/${g.managed.kind}`, g.managed])).values()];
  const lent = lentKinds.map((type) => ({ type, cache: manager.informer<ManagedResource>(type) }));
  const reconciler = new AccessReconciler({
    client: manager.control,
    recorder: manager.recorder,
    accesses: { type: o.access, cache: accesses },
    buckets: { type: o.claim, cache: buckets },
    grantors: o.grantors,
    lent,
    granted,
    secrets,
  });
  const controller = manager.controller(`access/${kindName(o.access)}`, reconciler);
  const enqueue = (key: string): void => controller.enqueue(key);
  // An access that goes wakes its key: one whose finalizer was removed by hand left its users behind.
  onChange(
    accesses,
    (a) => {
      reconciler.revocations.forgotten(a);
      enqueue(keyOf(a.metadata));
    },
    { on: ['deleted'] },
  );
  enqueueOnChange(accesses, controller, {
    on: ['added', 'updated'],
    when: (old, a) => desiredStateChanged(old, a) || !sameJson(old.spec, a.spec),
  });
  // A Bucket that changes (shares, binds, goes) wakes the accesses that name it.
  const bucketChanged = (b: ReadonlyDeep<Claim>): void => {
    for (const a of accesses.list())
      if (a.spec?.bucketRef?.namespace === b.metadata.namespace && a.spec?.bucketRef?.name === b.metadata.name) enqueue(keyOf(a.metadata));
  };
  onChange(buckets, bucketChanged);
  // So does the resource a Bucket is bound to (its claimRef, its bucket, its going): a grant is proven against it.
  const lentChanged = (mr: ReadonlyDeep<ManagedResource>): void => {
    const ref = claimRefOf(mr);
    if (ref?.kind !== o.claim.kind || !ref.namespace) return;
    for (const a of accesses.list())
      if (a.spec?.bucketRef?.namespace === ref.namespace && a.spec?.bucketRef?.name === ref.name) enqueue(keyOf(a.metadata));
  };
  for (const { cache } of lent) onChange(cache, lentChanged, { when: desiredStateChanged, old: true });
  const grantOf = (mr: ReadonlyDeep<ManagedResource>): void => {
    const ref = claimRefOf(mr);
    if (ref?.kind === o.access.kind && ref.namespace) enqueue(keyOf(ref));
  };
  for (const { cache } of granted) onChange(cache, grantOf);
  onChange(secrets, secretOwner, { on: ['added', 'updated'] });
  // A copy an earlier access of a name left (its garbage, collected once it is gone) stands in the way
  // of the access made again under that name: its going wakes that access.
  onChange(
    secrets,
    (s) => {
      const owner = s.metadata.ownerReferences?.find((r) => r.controller);
      if (owner?.kind === o.access.kind && owner.name) enqueue(keyOf({ namespace: s.metadata.namespace, name: owner.name }));
    },
    { on: ['deleted'] },
  );
  function secretOwner(s: ReadonlyDeep<SecretObject>): void {
    const owner = s.metadata.ownerReferences?.find((r) => r.controller) as { kind?: string; name: string } | undefined;
    if (!owner) return;
    for (const { type, cache } of granted) {
      if (owner.kind !== type.kind) continue;
      const mr = cache.get({ namespace: s.metadata.namespace, name: owner.name });
      if (mr) grantOf(mr);
    }
  }
  return controller;
}
