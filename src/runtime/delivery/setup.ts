// setupDelivery: one delivery controller per claim kind, woken by its claims, their own connection
// Secrets, the managed resources and classes that say where a store is and how it is exposed, the
// Providers that consent, and, in each consumer cluster, a watch of the Secrets it delivered there
// (drift is repaired from that watch, as it is in targets).
import { readLive } from '../../kit/kube/live.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import { sameJson } from '../../kit/json.ts';
import type { KubeObjectLike } from '../../kit/kube/client.ts';
import { Secrets, type ResourceType } from '../../kit/kube/resources.ts';
import type { Manager } from '../../kit/controller/manager.ts';
import { connectionSecrets, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { kindName } from '../../kit/controller/names.ts';
import type { ProviderSystem } from '../system/provider-system.ts';
import type { Target } from '../providers/targets.ts';
import { desiredStateChanged } from '../../kit/controller/predicates.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { objectKeyOf } from '../../kit/kube/object-key.ts';
import { claimRefOf, type Claim } from '../claims/claim.ts';
import { digestOf, heldAsDigest, type DeliveringClaim, type Exposure } from './consumers.ts';
import { DeliveryReconciler, LABEL_DELIVERED, resourceOf } from './reconciler.ts';
import { getCondition } from '../../kit/conditions.ts';
import { onChange } from '../../kit/controller/handlers.ts';

export interface DeliverySetup {
  claim: ResourceType;
  /** For a claim that reaches another claim's bucket (BucketAccess): that claim's kind, and which one it names. */
  bucket?: {
    type: ResourceType;
    of(claim: ReadonlyDeep<DeliveringClaim>): { namespace: string; name: string } | undefined;
    /** Whether the claim holds a grant of that bucket: of one it does not, nothing is delivered, not even where it is. */
    held(bucket: ReadonlyDeep<Claim>, claim: ReadonlyDeep<DeliveringClaim>): boolean;
  };
  managed: ResourceType[];
  classes: ResourceType[];
  /** The store a resource's endpoint is, when it is another resource (see NativeKind.endpointFrom). */
  storeOf?(mr: ReadonlyDeep<ManagedResource>): { kind: string; name: string } | undefined;
}

export function setupDelivery(manager: Manager, system: ProviderSystem, o: DeliverySetup): Controller {
  const claims = manager.informer<DeliveringClaim>(o.claim);
  const buckets = o.bucket ? manager.informer<Claim>(o.bucket.type) : undefined;
  const secrets = connectionSecrets(manager);
  const managed = new Map(o.managed.map((t) => [t.kind, manager.informer<ManagedResource>(t)]));
  const classes = new Map(o.classes.map((t) => [t.kind, manager.informer<KubeObjectLike & { spec?: { exposure?: Exposure } }>(t)]));
  const resource = resourceOf(o.claim);
  const subscribed = new WeakSet<Informer<SecretObject>>();
  /** The consumer clusters watched so far, and their caches of delivered Secrets. */
  const watched = new Map<string, { target: Target; cache: Informer<SecretObject> }>();

  const controller = manager.controller(
    `delivery/${kindName(o.claim)}`,
    new DeliveryReconciler({
      client: manager.control,
      recorder: manager.recorder,
      claims: { type: o.claim, cache: claims },
      bucketOf: (claim) => {
        if (!o.bucket) return claim;
        const ref = o.bucket.of(claim);
        const bucket = ref ? buckets!.get(ref) : undefined;
        return bucket && o.bucket.held(bucket, claim) ? bucket : undefined;
      },
      secrets,
      managed,
      classes,
      storeOf: o.storeOf,
      providers: system.resolver,
      marks: system.marks,
      delivered: (target: Target) => deliveredIn(target),
    }),
  );
  /** The consumer cluster's watch of the Secrets delivered there (started on first use). */
  function deliveredIn(target: Target): Informer<SecretObject> {
    // Whoever may make Secrets there may make ones with these labels, of any size: the cache holds
    // their data as a digest.
    const cache = target.informers.informer<SecretObject>(Secrets, {
      labelSelector: `${system.marks.selector},${LABEL_DELIVERED}=true`,
      transform: heldAsDigest,
    });
    watched.set(target.fingerprint, { target, cache });
    if (!subscribed.has(cache)) {
      subscribed.add(cache);
      cache.on({ added: (s) => seen(target, s), updated: (old, s) => changed(old, s), deleted: freed });
    }
    return cache;
  }
  // A consumer cluster may hold no store, so no reconcile keeps its client in use: its watch of what we
  // delivered keeps it open. Closed for new credentials, the claims it held are woken to watch anew.
  system.targets.addHooks({
    inUse: (target) => watched.has(target.fingerprint),
    stopped: (target) => {
      const closing = watched.get(target.fingerprint);
      watched.delete(target.fingerprint);
      for (const s of closing?.cache.list() ?? []) ownerOf(s);
    },
  });
  const enqueue = (key: string): void => controller.enqueue(key);
  const delivering = (): ReadonlyDeep<DeliveringClaim>[] =>
    claims.list().filter((c) => c.spec?.consumers?.length || c.status?.deliveries?.length);

  // In a consumer cluster: a Secret of ours that changed (or went) wakes its claim, which repairs it.
  function ownerOf(s: ReadonlyDeep<SecretObject>): void {
    const owner = system.marks.claimedOwner(s);
    if (owner?.resource === resource) enqueue(owner.key);
  }
  // Listed or made there: its claim is woken; one whose claim is proven gone (a crash between writing it
  // and recording it, a status lost) is deleted, as a leak of ours, with its uid as precondition.
  function seen(target: Target, s: ReadonlyDeep<SecretObject>): void {
    ownerOf(s);
    const owner = system.marks.provenOwner(Secrets, s);
    if (owner?.resource !== resource) return;
    // Listed before the claims were (at start): judged once they are, or no later event would judge it.
    if (!claims.hasSynced) {
      void claims.start().then(() => judge(target, s, owner));
      return;
    }
    judge(target, s, owner);
  }
  function judge(
    target: Target,
    s: ReadonlyDeep<SecretObject>,
    owner: { name: string; namespace: string; key: string; uid: string },
  ): void {
    if (claims.get(owner.key)?.metadata.uid !== owner.uid) sweep(target, s, owner);
  }
  // A claim gone without its finalizer's work (removed by hand): what it left in watched clusters goes.
  const claimGone = (c: ReadonlyDeep<DeliveringClaim>): void => {
    for (const { target, cache } of watched.values())
      for (const s of cache.list()) {
        const owner = system.marks.provenOwner(Secrets, s);
        if (owner?.resource === resource && owner.uid === c.metadata.uid) sweep(target, s, owner);
      }
  };
  onChange(claims, claimGone, { on: ['deleted'] });
  function sweep(
    target: Target,
    s: ReadonlyDeep<SecretObject>,
    owner: { name: string; namespace: string; key: string; uid: string },
  ): void {
    void (async () => {
      const live = await readLive<DeliveringClaim>(manager.control, o.claim, { namespace: owner.namespace, name: owner.name });
      if (live?.metadata.uid === owner.uid) return;
      await target.client.delete(Secrets, { namespace: s.metadata.namespace, name: s.metadata.name }, { uid: s.metadata.uid });
      manager.log.info('deleted a delivered Secret whose claim is gone', {
        secret: keyOf(s.metadata),
        target: target.server,
        claim: owner.key,
      });
    })().catch((err: unknown) => manager.log.debug('could not judge a delivered Secret', { error: (err as Error).message }));
  }
  function changed(old: ReadonlyDeep<SecretObject>, s: ReadonlyDeep<SecretObject>): void {
    if (
      digestOf(old) !== digestOf(s) ||
      !sameJson(old.metadata.labels, s.metadata.labels) ||
      !sameJson(old.metadata.annotations, s.metadata.annotations)
    )
      ownerOf(s);
  }
  // A name that is free again may be another claim's turn.
  function freed(s: ReadonlyDeep<SecretObject>): void {
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
  const copyChanged = (s: ReadonlyDeep<SecretObject>): void => {
    const owner = s.metadata.ownerReferences?.find((r) => r.controller);
    if (owner?.kind === o.claim.kind && owner.name) enqueue(keyOf({ ...objectKeyOf(s), name: owner.name }));
  };
  onChange(secrets, copyChanged);
  // A Provider's consent, or its going, decides what may be delivered into its cluster.
  const providerChanged = (p: ReadonlyDeep<KubeObjectLike>): void => {
    const name = `${p.metadata.namespace}/${p.metadata.name}/`;
    for (const c of delivering())
      if (
        (c.status?.deliveries ?? []).some((d) => d.to.startsWith(name)) ||
        c.spec?.consumers?.some((x) => `${x.providerRef.namespace}/${x.providerRef.name}/` === name)
      )
        enqueue(keyOf(c.metadata));
  };
  // A cluster that consents to deliveries is watched from the start: what a crash or a restore left
  // there is judged by its first list, whether or not a claim delivers there now.
  const watchConsenting = (p: ReadonlyDeep<KubeObjectLike & { spec?: { consumers?: unknown[] } }>): void => {
    if (!p.spec?.consumers?.length) return;
    system.resolver.resolve(p as unknown as Parameters<typeof system.resolver.resolve>[0]).then(deliveredIn, () => undefined);
  };
  const ready = (p: ReadonlyDeep<KubeObjectLike>) =>
    getCondition((p as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions, 'Ready')?.status;
  const consentingChanged = (p: ReadonlyDeep<KubeObjectLike & { spec?: { consumers?: unknown[] } }>): void => {
    watchConsenting(p);
    providerChanged(p);
  };
  // Its consent, its going, or its cluster answering again (what waited for it is tried at once).
  onChange(system.providers, consentingChanged, {
    on: ['added', 'updated'],
    when: (old, p) =>
      !sameJson(old.spec, p.spec) || old.metadata.deletionTimestamp !== p.metadata.deletionTimestamp || ready(old) !== ready(p),
  });
  onChange(system.providers, providerChanged, { on: ['deleted'] });
  // A class's exposure changes what consumers in other clusters get.
  const classChanged = (): void => {
    for (const c of delivering()) enqueue(keyOf(c.metadata));
  };
  for (const cache of classes.values())
    onChange(cache, classChanged, { on: ['updated'], when: (old, cls) => !sameJson(old.spec?.exposure, cls.spec?.exposure) });
  // A resource bound (or placed) wakes the claims it serves.
  for (const cache of managed.values())
    cache.on({
      updated: (old, mr) => {
        const exposure = (x: ReadonlyDeep<ManagedResource>) =>
          (x.status as { atProvider?: { exposure?: unknown } } | undefined)?.atProvider?.exposure;
        // A store's exposure found (or lost) an address: every claim that reaches that store may deliver anew.
        if (!sameJson(exposure(old), exposure(mr))) {
          for (const c of delivering()) enqueue(keyOf(c.metadata));
          return;
        }
        if (sameJson(old.spec.providerRef, mr.spec.providerRef)) return;
        const ref = claimRefOf(mr);
        if (!ref?.namespace) return;
        if (!o.bucket) enqueue(keyOf(ref));
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
