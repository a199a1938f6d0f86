// setupDelivery: one delivery controller per claim kind, woken by its claims, their own connection
// Secrets, the managed resources and classes that say where a store is and how it is exposed, the
// Providers that consent, and, in each consumer cluster, a watch of the Secrets it delivered there
// (drift is repaired from that watch, as it is in targets).
import type { Controller } from '../controller.ts';
import type { Informer } from '../informer.ts';
import { sameJson } from '../json.ts';
import type { KubeObjectLike } from '../kube/client.ts';
import { Secrets, type ResourceType } from '../kube/resources.ts';
import type { Manager } from '../manager.ts';
import { connectionSecrets, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { kindName } from '../names.ts';
import type { ProviderSystem } from '../native/provider-system.ts';
import type { Target } from '../native/targets.ts';
import { desiredStateChanged } from '../predicates.ts';
import { keyOf } from '../result.ts';
import { claimRefOf, type Claim } from '../claims/claim.ts';
import type { DeliveringClaim, Exposure } from './consumers.ts';
import { DeliveryReconciler, LABEL_DELIVERED, resourceOf } from './reconciler.ts';

export interface DeliverySetup {
  claim: ResourceType;
  /** For a claim that reaches another claim's bucket (BucketAccess): that claim's kind, and which one it names. */
  bucket?: { type: ResourceType; of(claim: DeliveringClaim): { namespace: string; name: string } | undefined };
  managed: ResourceType[];
  classes: ResourceType[];
  /** The store a resource's endpoint is, when it is another resource (see NativeKind.endpointFrom). */
  storeOf?(mr: ManagedResource): { kind: string; name: string } | undefined;
}

export function setupDelivery(manager: Manager, system: ProviderSystem, o: DeliverySetup): Controller {
  const claims = manager.informer<DeliveringClaim>(o.claim);
  const buckets = o.bucket ? manager.informer<Claim>(o.bucket.type) : undefined;
  const secrets = connectionSecrets(manager);
  const managed = new Map(o.managed.map((t) => [t.kind, manager.informer<ManagedResource>(t)]));
  const classes = new Map(o.classes.map((t) => [t.kind, manager.informer<KubeObjectLike & { spec?: { exposure?: Exposure } }>(t)]));
  const resource = resourceOf(o.claim);
  const subscribed = new WeakSet<Informer<SecretObject>>();

  const controller = manager.controller(
    `delivery/${kindName(o.claim)}`,
    new DeliveryReconciler({
      client: manager.control,
      recorder: manager.recorder,
      claims: { type: o.claim, cache: claims },
      bucketOf: (claim) => {
        if (!o.bucket) return claim;
        const ref = o.bucket.of(claim);
        return ref ? buckets!.get(`${ref.namespace}/${ref.name}`) : undefined;
      },
      secrets,
      managed,
      classes,
      storeOf: o.storeOf,
      providers: system.resolver,
      marks: system.marks,
      delivered: (target: Target) => {
        const cache = target.informers.informer<SecretObject>(Secrets, {
          labelSelector: `${system.marks.selector},${LABEL_DELIVERED}=true`,
        });
        if (!subscribed.has(cache)) {
          subscribed.add(cache);
          cache.on({ added: ownerOf, updated: (old, s) => changed(old, s), deleted: freed });
        }
        return cache;
      },
    }),
  );
  const enqueue = (key: string): void => controller.enqueue(key);
  const delivering = (): DeliveringClaim[] => claims.list().filter((c) => c.spec?.consumers?.length || c.status?.deliveries?.length);

  // In a consumer cluster: a Secret of ours that changed (or went) wakes its claim, which repairs it.
  function ownerOf(s: SecretObject): void {
    const owner = system.marks.claimedOwner(s);
    if (owner?.resource === resource) enqueue(owner.key);
  }
  function changed(old: SecretObject, s: SecretObject): void {
    if (
      !sameJson(old.data, s.data) ||
      !sameJson(old.metadata.labels, s.metadata.labels) ||
      !sameJson(old.metadata.annotations, s.metadata.annotations)
    )
      ownerOf(s);
  }
  // A name that is free again may be another claim's turn.
  function freed(s: SecretObject): void {
    ownerOf(s);
    for (const c of delivering())
      if (
        c.spec?.consumers?.some(
          (x) => x.namespace === s.metadata.namespace && (x.secretName ?? c.spec?.writeConnectionSecretToRef?.name) === s.metadata.name,
        )
      )
        enqueue(keyOf(c.metadata));
  }

  claims.on({
    added: (c) => {
      if (c.spec?.consumers?.length || c.status?.deliveries?.length || c.metadata.finalizers?.length) enqueue(keyOf(c.metadata));
    },
    updated: (old, c) => {
      if (desiredStateChanged(old, c)) enqueue(keyOf(c.metadata));
      // Where its store is comes with binding (status), for the claims that wait to deliver.
      else if (c.spec?.consumers?.length && !sameJson(old.status?.providerRef, c.status?.providerRef)) enqueue(keyOf(c.metadata));
    },
  });
  // Its own copy changed (new keys, a withheld endpoint): deliver it again.
  const copyChanged = (s: SecretObject): void => {
    const owner = s.metadata.ownerReferences?.find((r) => r.controller);
    if (owner?.kind === o.claim.kind) enqueue(`${s.metadata.namespace}/${owner.name}`);
  };
  secrets.on({ added: copyChanged, updated: (_, s) => copyChanged(s), deleted: copyChanged });
  // A Provider's consent, or its going, decides what may be delivered into its cluster.
  const providerChanged = (p: KubeObjectLike): void => {
    const name = `${p.metadata.namespace}/${p.metadata.name}/`;
    for (const c of delivering())
      if (
        (c.status?.deliveries ?? []).some((d) => d.to.startsWith(name)) ||
        c.spec?.consumers?.some((x) => `${x.providerRef.namespace}/${x.providerRef.name}/` === name)
      )
        enqueue(keyOf(c.metadata));
  };
  system.providers.on({
    added: providerChanged,
    updated: (old, p) => {
      // Its consent, its going, or its cluster answering again (what waited for it is tried at once).
      const ready = (x: typeof p) =>
        (x as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions?.find((c) => c.type === 'Ready')?.status;
      if (!sameJson(old.spec, p.spec) || old.metadata.deletionTimestamp !== p.metadata.deletionTimestamp || ready(old) !== ready(p))
        providerChanged(p);
    },
    deleted: providerChanged,
  });
  // A class's exposure changes what consumers in other clusters get.
  const classChanged = (): void => {
    for (const c of delivering()) enqueue(keyOf(c.metadata));
  };
  for (const cache of classes.values())
    cache.on({ updated: (old, cls) => !sameJson(old.spec?.exposure, cls.spec?.exposure) && classChanged() });
  // A resource bound (or placed) wakes the claims it serves.
  for (const cache of managed.values())
    cache.on({
      updated: (old, mr) => {
        const exposure = (x: ManagedResource) => (x.status as { atProvider?: { exposure?: unknown } } | undefined)?.atProvider?.exposure;
        // A store's exposure found (or lost) an address: every claim that reaches that store may deliver anew.
        if (!sameJson(exposure(old), exposure(mr))) {
          for (const c of delivering()) enqueue(keyOf(c.metadata));
          return;
        }
        if (sameJson(old.spec.providerRef, mr.spec.providerRef)) return;
        const ref = claimRefOf(mr);
        if (!ref?.namespace) return;
        if (!o.bucket) enqueue(`${ref.namespace}/${ref.name}`);
        // A grant's store is its Bucket's: the accesses that reach that Bucket wake.
        else
          for (const c of delivering()) {
            const b = o.bucket.of(c);
            if (b?.namespace === ref.namespace && b.name === ref.name) enqueue(keyOf(c.metadata));
          }
      },
    });
  return controller;
}
