// setupClaim: registers a claim kind with its portable class and default-class policy, served by
// one claim controller per non-portable class kind (crossplane's claim era: EnqueueRequestForClaim
// and class-kind predicates decide which controller a change wakes).
import type { Controller } from '../controller.ts';
import { sameJson } from '../json.ts';
import type { KubeObjectLike } from '../kube/client.ts';
import type { ResourceType } from '../kube/resources.ts';
import type { Manager } from '../manager.ts';
import { connectionSecrets, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { kindName } from '../names.ts';
import { desiredStateChanged } from '../predicates.ts';
import { keyOf } from '../result.ts';
import { ClaimReconciler } from './binding.ts';
import type { Claim, ObjectReference, PortableClass } from './claim.ts';
import { DefaultClassReconciler } from './defaulting.ts';

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
