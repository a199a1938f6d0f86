// The delivery controller: a claim's connection Secret, delivered to each cluster and namespace its
// spec.consumers names (as OCM ManifestWork or a provider-kubernetes Object would put it there, but
// written straight from the claim's own copy, so the keys sit in no other object). Each delivered
// Secret carries signed ownership marks; one provider-rook cannot prove its own is never written,
// nor deleted. The consumer cluster's Provider consents per claim namespace; a consumer outside the
// store's cluster gets the class's exposure as its endpoint, or nothing. One pass reads top to
// bottom (place, prove, write or remove, record), past 400 lines on purpose; what each consumer
// needs (consent, endpoint, data) is in consumers.ts.
import { keyOf } from '../../kit/controller/result.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import { copyOf, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError, setCondition, type Condition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { addFinalizer, removeFinalizer } from '../../kit/controller/finalizers.ts';
import { sameJson } from '../../kit/json.ts';
import type { Client, KubeObjectLike } from '../../kit/kube/client.ts';
import { isAlreadyExists, isConflict, isNotFound, UnreachableError } from '../../kit/kube/errors.ts';
import { Secrets, type ResourceType } from '../../kit/kube/resources.ts';
import { controllerUid, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { CONNECTION_SECRET_TYPE, hasFinalizer, isDeleting } from '../../kit/meta.ts';
import type { Owner, OwnershipMarks } from '../ownership/marks.ts';
import type { ProviderObject } from '../providers/provider.ts';
import type { Target } from '../providers/targets.ts';
import { Reasons, reasonOf, type Reason, type Reported } from '../reasons.ts';
import { done, requeue, requeueAfter, type Result } from '../../kit/controller/result.ts';
import { claimRefOf, refersTo, type Claim } from '../claims/claim.ts';
import type { Cache } from '../../kit/controller/informer.ts';
import {
  dataDigest,
  dataFor,
  digestOf,
  placeKey,
  placeOf,
  refuseUnlessConsented,
  wantedPlaces,
  type Delivery,
  type DeliveringClaim,
  type Exposure,
  type Place,
} from './consumers.ts';
import { keysDigest } from './hold.ts';

/** Held while a claim's delivered Secrets may still be out there: a claim goes once they are deleted. */
export const FINALIZER_DELIVERY = 'rook.crossplane.io/deliveries';
/** On every delivered Secret: what the consumer cluster's watch selects (with the control plane's mark). */
export const LABEL_DELIVERED = 'rook.crossplane.io/delivered';
export const CONDITION_DELIVERED = 'Delivered';

/** A consumer that failed: looked at again after this long (an unreachable cluster tells no watch when it is back). */
const RECHECK_MS = 30_000;

export interface DeliveryOptions {
  client: Client;
  recorder: EventRecorder;
  claims: { type: ResourceType; cache: Cache<DeliveringClaim> };
  /** The Bucket whose store the claim reaches: the claim itself, or a BucketAccess's Bucket. */
  bucketOf(claim: DeliveringClaim): ReadonlyDeep<Claim> | undefined;
  /** The control cluster's connection Secrets (the claim's own copy is what is delivered). */
  secrets: Cache<SecretObject>;
  /** Managed resources by kind, and classes by kind: where the store is, and how its class exposes it. */
  managed: Map<string, Cache<ManagedResource>>;
  classes: Map<string, Cache<KubeObjectLike & { spec?: { exposure?: Exposure } }>>;
  /** The store a managed resource's endpoint is (its kind and name, in its namespace), when it is not the resource itself (a bucket in a shared store). */
  storeOf?(mr: ReadonlyDeep<ManagedResource>): { kind: string; name: string } | undefined;
  providers: {
    provider(key: Required<ObjectKey>): ReadonlyDeep<ProviderObject>;
    resolve(provider: ReadonlyDeep<ProviderObject>, signal?: AbortSignal): Promise<Target>;
  };
  marks: OwnershipMarks;
  /** The consumer cluster's cache of delivered Secrets (its watch wakes their claims). */
  delivered(target: Target): Cache<SecretObject> & { readonly hasSynced: boolean };
}

/** Where the claim's store is: its Provider ("namespace/name") and how other clusters reach it (or what that waits for). */
interface StorePlace {
  provider?: string;
  exposure?: Exposure;
  waiting?: string;
}

/** A store's own exposure, as its spec asks and its status found. */
type Exposed = ManagedResource & {
  spec: { exposure?: { caBundle?: string; addressingStyle?: 'path' | 'virtual' } };
  status?: { atProvider?: { exposure?: { endpoint?: string; waiting?: string } } };
};

/** How a delivered Secret's endpoint resolves: the store's Service name, or the class's exposure. */
type Endpoint = NonNullable<Delivery['endpoint']>;

/** Failures after which a place holds none of the claim's keys that a rotation must wait for. */
const FORGETS_KEYS = new Set<string>([
  Reasons.ConsumerSecretRefused,
  Reasons.ConnectionSecretConflict,
  Reasons.ConsumerSecretTaken,
  Reasons.ConsumerProviderNotFound,
  Reasons.ConsumerNamespaceNotFound,
]);

export class DeliveryReconciler {
  private readonly o: DeliveryOptions;

  constructor(o: DeliveryOptions) {
    this.o = o;
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.claims.cache.get(key);
    if (!cached) return done();
    let claim = copyOf<DeliveringClaim>(cached as ReadonlyDeep<DeliveringClaim>);
    const wanted = wantedPlaces(claim);
    const recorded = claim.status?.deliveries ?? [];
    // Whatever may hold a Secret of ours: what status records, and (being deleted) what the spec still names.
    const held = new Map(recorded.filter(mayHold).map((d) => [placeKey(d), placeOf(d)]));
    // A place the spec names and status never recorded may hold a Secret made just before a crash;
    // not one whose Provider does not consent: nothing was ever delivered there, nor is it read.
    const known = new Map(recorded.map((d) => [placeKey(d), d]));
    if (isDeleting(claim.metadata))
      for (const p of wantedPlaces({ ...claim, metadata: { ...claim.metadata, deletionTimestamp: undefined } }))
        if (!known.has(placeKey(p)) && this.consents(claim, p)) held.set(placeKey(p), p);
    for (const p of wanted) held.delete(placeKey(p));
    if (wanted.length === 0 && held.size === 0 && !hasFinalizer(claim.metadata, FINALIZER_DELIVERY) && !claim.status?.deliveries)
      return done();
    const source = this.source(claim);
    // Nothing to deliver yet, nothing delivered: the claim's own copy wakes this when it comes (its
    // binding says meanwhile why it waits), and no write is spent on saying so twice. Unless its
    // finalizer is left to remove (a pass cut off after clearing the record): only this pass removes it.
    const finalizerLeft = hasFinalizer(claim.metadata, FINALIZER_DELIVERY) && (wanted.length === 0 || isDeleting(claim.metadata));
    if (!source && held.size === 0 && recorded.length === 0 && !finalizerLeft) return done();
    try {
      if (wanted.length && !hasFinalizer(claim.metadata, FINALIZER_DELIVERY))
        claim = await addFinalizer(this.o.client, this.o.claims.type, claim, FINALIZER_DELIVERY, signal);
      const from = { claim, source, store: this.storePlace(claim) };
      const results: Delivery[] = [];
      for (const place of wanted) results.push(await this.deliver(from, place, known.get(placeKey(place)), signal));
      const delivering = await this.delivering(wanted, results, signal);
      for (const place of held.values()) if (place) results.push(...(await this.remove(claim, place, delivering, signal)));
      await this.writeStatus(claim, results, signal);
      const pending = results.some((d) => d.removing);
      if (!pending && (wanted.length === 0 || isDeleting(claim.metadata)) && hasFinalizer(claim.metadata, FINALIZER_DELIVERY))
        await removeFinalizer(this.o.client, this.o.claims.type, claim, FINALIZER_DELIVERY, signal);
      // Waiting for the claim's own Secret, or revoked: the claim's changes bring it back, not a timer.
      const waitsOnClaim = (d: Delivery) => d.reason === Reasons.WaitingForConnectionSecret || d.reason === Reasons.AccessNotAllowed;
      return results.some((d) => !d.delivered && !waitsOnClaim(d)) ? requeueAfter(RECHECK_MS) : done();
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return requeue();
      throw err;
    }
  }

  /** The claim's own copy, once it has one it controls. */
  private source(claim: DeliveringClaim): Record<string, string> | undefined {
    const to = claim.spec?.writeConnectionSecretToRef?.name;
    const copy = to ? this.o.secrets.get({ namespace: claim.metadata.namespace, name: to }) : undefined;
    if (!copy || controllerUid(copy) !== claim.metadata.uid) return undefined;
    return copy.data ?? {};
  }

  private storePlace(claim: DeliveringClaim): StorePlace {
    const bucket = this.o.bucketOf(claim);
    const ref = bucket?.spec?.resourceRef;
    const mr = ref?.kind ? this.o.managed.get(ref.kind)?.get(ref) : undefined;
    // Only the resource made for that very Bucket, as binding proves it: a resourceRef an app team
    // wrote by hand could name another team's store, and its address and CA would be delivered.
    if (!mr || !bucket || !refersTo(claimRefOf(mr), bucket)) return {};
    const provider = mr.spec.providerRef?.name ? keyOf({ namespace: mr.metadata.namespace, name: mr.spec.providerRef.name }) : undefined;
    // A URL the class gives (a shared store behind the platform team's ingress) comes first.
    const cls = mr.spec.classRef as { kind?: string; name: string; namespace?: string } | undefined;
    const url = cls?.kind ? this.o.classes.get(cls.kind)?.get(cls)?.spec?.exposure : undefined;
    if (url?.url) return { provider, exposure: url };
    // Else what the store itself made and found: the resource, or the store its endpoint is.
    const storeRef = this.o.storeOf?.(mr);
    const store = (storeRef ? this.o.managed.get(storeRef.kind)?.get({ namespace: mr.metadata.namespace, name: storeRef.name }) : mr) as
      Exposed | undefined;
    const found = store?.status?.atProvider?.exposure;
    if (!store?.spec.exposure || !found) return { provider };
    if (!found.endpoint) return { provider, waiting: found.waiting ?? 'the store has no address for other clusters yet' };
    const { caBundle, addressingStyle } = store.spec.exposure;
    return {
      provider,
      exposure: { url: found.endpoint, ...(caBundle ? { caBundle } : {}), ...(addressingStyle ? { addressingStyle } : {}) },
    };
  }

  private provider(place: Place): ReadonlyDeep<ProviderObject> {
    try {
      return this.o.providers.provider({ namespace: place.provider.namespace, name: place.provider.name });
    } catch {
      throw new ReasonedError(
        Reasons.ConsumerProviderNotFound,
        `${place.field}: Provider ${place.provider.namespace}/${place.provider.name} does not exist`,
      );
    }
  }

  /** Delivers the claim's Secret (`source`, its data) from its store's cluster to one place; `before`: what status recorded there. */
  private async deliver(
    from: { claim: DeliveringClaim; source: Record<string, string> | undefined; store: StorePlace },
    place: Place,
    before: Delivery | undefined,
    signal: AbortSignal,
  ): Promise<Delivery> {
    const { claim, source, store } = from;
    const base = { to: place.to, secretName: place.secretName };
    // What a pass that wrote nothing keeps of the record: that a Secret of ours may be there (its
    // endpoint kind). A record that says so by its reason alone (a write whose answer was lost) gets
    // the kind this place would have, or a later pass that writes nothing would forget the Secret.
    const wouldBe: Endpoint = store.provider === keyOf(place.provider) ? 'ClusterDNS' : 'Exposed';
    let held: Pick<Delivery, 'endpoint' | 'keys'> | undefined =
      before && mayHold(before) ? { endpoint: before.endpoint ?? wouldBe, keys: before.keys } : undefined;
    const kept = (keys: boolean) => (held ? { endpoint: held.endpoint, ...(keys && held.keys ? { keys: held.keys } : {}) } : {});
    let provider: ReadonlyDeep<ProviderObject> | undefined;
    try {
      provider = this.provider(place);
      refuseUnlessConsented(provider, claim.metadata.namespace!, place);
      // A claim that delivered here and now holds no resource and no Secret had its keys revoked (an
      // access its Bucket no longer allows): what was delivered of them goes too.
      if (!source && held && !claim.spec?.resourceRef) {
        await this.removeFrom(claim, provider, place, signal);
        return { ...base, delivered: false, reason: Reasons.AccessNotAllowed, message: 'the access was revoked: nothing is delivered' };
      }
      if (!source || !store.provider)
        return {
          ...base,
          delivered: false,
          ...kept(true),
          reason: Reasons.WaitingForConnectionSecret,
          message: 'the claim has no connection Secret yet',
        };
      const sameCluster = store.provider === keyOf(place.provider);
      if (!sameCluster && store.waiting)
        throw new ReasonedError(
          Reasons.WaitingForExposure,
          `${place.field}: the store cannot be reached from other clusters yet: ${store.waiting}`,
        );
      if (!sameCluster && !store.exposure) {
        throw new ReasonedError(
          Reasons.NoEndpointForConsumer,
          `${place.field}: the store is in the cluster of Provider ${store.provider.split('/')[1]}, and its class sets no exposure: ` +
            `its Service name does not resolve in the cluster of Provider ${place.provider.name}, so nothing is delivered there`,
        );
      }
      const endpoint: Endpoint = sameCluster ? 'ClusterDNS' : 'Exposed';
      const target = await this.o.providers.resolve(provider, signal);
      const data = dataFor(source, endpoint, store.exposure);
      const intent: Delivery | undefined = held ? undefined : { ...base, delivered: false, endpoint };
      // Once a Secret of ours is found there, or one is about to be written, a failure (its answer
      // lost) must still say one may be there; not before: a cluster never reached holds nothing.
      const holds = () => void (held ??= { endpoint, keys: undefined });
      const wrote = await this.write(target, claim, place, { data, intent, holds }, signal);
      if (wrote)
        this.o.recorder.normal(
          claim,
          Reasons.DeliveredConnectionSecret,
          `${wrote === 'created' ? 'Delivered' : 'Updated'} connection Secret ${place.namespace}/${place.secretName} in the cluster of Provider ${place.provider.name}`,
        );
      return { ...base, delivered: true, endpoint, ...withKeys(source) };
    } catch (err) {
      // The claim's status could not be written (it changed since it was read): the pass starts again.
      if (err instanceof StatusNotWritten) throw err.refusal;
      // A consumer the platform team no longer allows, or no longer gives an endpoint, loses what was delivered there.
      const withdrawn = provider && (reasonOf(err) === Reasons.ConsumerNotAllowed || reasonOf(err) === Reasons.NoEndpointForConsumer);
      const removed = withdrawn
        ? await this.removeFrom(claim, provider!, place, signal).then(
            () => true,
            () => false,
          )
        : false;
      // A Secret not ours in its place (ours deleted or stripped of its marks), a namespace that is gone,
      // or a cluster no Provider names any more (its keys are forgotten: they die with a rotation) holds
      // none of our keys: the place keeps no keys on record, or it would hold replaced keys back from
      // removal for ever.
      const replaced = FORGETS_KEYS.has(reasonOf(err));
      return { ...base, delivered: false, ...(removed ? {} : kept(!replaced)), ...failure(err) };
    }
  }

  /**
   * Creates or updates the Secret there; never one that is not proven ours. `intent`: what to record
   * in the claim's status before anything is written there (recordIntent), if not recorded yet.
   */
  private async write(
    target: Target,
    claim: DeliveringClaim,
    place: Place,
    what: { data: Record<string, string>; intent?: Delivery; holds(): void },
    signal: AbortSignal,
  ): Promise<'created' | 'updated' | undefined> {
    const { data, holds } = what;
    let intent = what.intent;
    const recordIntent = async (): Promise<void> => {
      holds();
      if (intent) await this.recordIntent(claim, intent, signal);
      intent = undefined;
    };
    const { client } = target;
    const cache = this.o.delivered(target);
    const owner = ownerOf(this.o.claims.type, claim);
    const desired = this.o.marks.mark(
      Secrets,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: place.secretName, namespace: place.namespace, labels: { [LABEL_DELIVERED]: 'true' } },
        type: CONNECTION_SECRET_TYPE,
        data,
      },
      owner,
    );
    let have: SecretObject | undefined = cache.hasSynced
      ? (cache.get({ namespace: place.namespace, name: place.secretName }) as SecretObject | undefined)
      : await client.get<SecretObject>(Secrets, { namespace: place.namespace, name: place.secretName }, signal);
    if (!have) {
      await recordIntent();
      try {
        await client.create(Secrets, desired, signal);
        return 'created';
      } catch (err) {
        if (isNotFound(err))
          throw new ReasonedError(
            Reasons.ConsumerNamespaceNotFound,
            `${place.field}: namespace ${place.namespace} does not exist in the cluster of Provider ${place.provider.name}; provider-rook does not make it`,
          );
        if (!isAlreadyExists(err)) throw err;
      }
      have = await client.get<SecretObject>(Secrets, { namespace: place.namespace, name: place.secretName }, signal);
      if (!have)
        throw new ReasonedError(Reasons.ReconcileError, `${place.field}: Secret ${place.namespace}/${place.secretName} came and went`);
    }
    this.refuseUnlessOurs(have, owner, place);
    holds();
    const labels = { ...have.metadata.labels, ...desired.metadata.labels };
    const annotations = { ...have.metadata.annotations, ...desired.metadata.annotations };
    if (
      digestOf(have) === dataDigest(data) &&
      sameJson(have.metadata.labels ?? {}, labels) &&
      sameJson(have.metadata.annotations ?? {}, annotations)
    )
      return undefined;
    // Made immutable there, or made anew with another type (by whoever may edit Secrets in that
    // namespace): neither takes new keys, and waiting for it would keep the replaced ones working for good.
    const unwritable =
      (have as { immutable?: boolean }).immutable === true
        ? 'has immutable: true'
        : (have.type ?? 'Opaque') !== CONNECTION_SECRET_TYPE
          ? `has another type than ${CONNECTION_SECRET_TYPE}, which a Secret cannot change`
          : undefined;
    if (unwritable)
      throw new ReasonedError(
        Reasons.ConsumerSecretRefused,
        `${place.field}: Secret ${place.namespace}/${place.secretName} in the cluster of Provider ${place.provider.name} ${unwritable}, ` +
          'so it cannot take new keys, and a key rotation does not wait for it. Delete it there, and it is delivered again',
      );
    await recordIntent();
    // What others keep on it (their finalizers, their owner references) stays: the write is the whole object.
    const { finalizers, ownerReferences, resourceVersion } = have.metadata as typeof have.metadata & { finalizers?: string[] };
    await client.update(
      Secrets,
      { ...desired, metadata: { ...desired.metadata, labels, annotations, finalizers, ownerReferences, resourceVersion } },
      signal,
    );
    return 'updated';
  }

  private refuseUnlessOurs(have: SecretObject, owner: Owner, place: Place): void {
    const relation = this.o.marks.relation(Secrets, have, owner);
    if (relation === 'ours') return;
    const where = `Secret ${place.namespace}/${place.secretName} in the cluster of Provider ${place.provider.name}`;
    const another = this.o.marks.provenOwner(Secrets, have);
    if (another && another.uid !== owner.uid)
      throw new ReasonedError(
        Reasons.ConsumerSecretTaken,
        `${place.field}: ${where} is delivered by another claim; name another secretName`,
      );
    throw new ReasonedError(
      Reasons.ConnectionSecretConflict,
      `${place.field}: ${where} exists and provider-rook cannot prove it made it for this claim; it is left as it is. Name another secretName, or delete it if nothing uses it`,
    );
  }

  /** Deletes what was delivered to a place no longer wanted; a Provider that is gone leaves nothing to reach. */
  /**
   * Where this pass delivered, as "<cluster fingerprint> <namespace>/<name>": two Providers may name
   * one cluster, and a place dropped through one may be the very Secret just delivered through the other.
   */
  private async delivering(wanted: Place[], results: Delivery[], signal: AbortSignal): Promise<Set<string>> {
    const at = new Set<string>();
    for (const [i, place] of wanted.entries()) {
      if (!results[i]?.delivered) continue;
      const target = await this.o.providers.resolve(this.provider(place), signal);
      at.add(`${target.fingerprint} ${place.namespace}/${place.secretName}`);
    }
    return at;
  }

  /** Whether the place's Provider is there and consents to the claim's deliveries there. */
  private consents(claim: DeliveringClaim, place: Place): boolean {
    try {
      refuseUnlessConsented(this.provider(place), claim.metadata.namespace!, place);
      return true;
    } catch {
      return false;
    }
  }

  private async remove(claim: DeliveringClaim, place: Place, delivering: Set<string>, signal: AbortSignal): Promise<Delivery[]> {
    let provider: ReadonlyDeep<ProviderObject>;
    try {
      provider = this.provider(place);
    } catch {
      this.o.recorder.warning(
        claim,
        Reasons.AbandonedConnectionSecret,
        `Provider ${place.provider.namespace}/${place.provider.name} was deleted: Secret ${place.namespace}/${place.secretName} in its cluster cannot be reached, and is left there (its keys are revoked with this claim's user)`,
      );
      return [];
    }
    try {
      const target = await this.o.providers.resolve(provider, signal);
      // Delivered there this pass through another Provider of the same cluster: it stays.
      if (!delivering.has(`${target.fingerprint} ${place.namespace}/${place.secretName}`))
        await this.removeFrom(claim, provider, place, signal);
      return [];
    } catch (err) {
      return [{ to: place.to, secretName: place.secretName, delivered: false, removing: true, ...failure(err) }];
    }
  }

  private async removeFrom(
    claim: DeliveringClaim,
    provider: ReadonlyDeep<ProviderObject>,
    place: Place,
    signal: AbortSignal,
  ): Promise<void> {
    const target = await this.o.providers.resolve(provider, signal);
    const have = await target.client.get<SecretObject>(Secrets, { namespace: place.namespace, name: place.secretName }, signal);
    if (!have || this.o.marks.relation(Secrets, have, ownerOf(this.o.claims.type, claim)) !== 'ours') return;
    await target.client.delete(Secrets, { namespace: place.namespace, name: place.secretName }, { uid: have.metadata.uid, signal });
    this.o.recorder.normal(
      claim,
      Reasons.RemovedConnectionSecret,
      `Deleted connection Secret ${place.namespace}/${place.secretName} in the cluster of Provider ${place.provider.name}`,
    );
  }

  /**
   * Records that a Secret of the claim's may be at `d`'s place, before it is written there: a pass
   * cut off after the write (a crash, a status write refused) leaves the next one a record to find it
   * by, should the spec no longer name that place.
   */
  private async recordIntent(claim: DeliveringClaim, d: Delivery, signal: AbortSignal): Promise<void> {
    const others = (claim.status?.deliveries ?? []).filter((x) => placeKey(x) !== placeKey(d));
    const stored = await this.o.client
      .updateStatus(this.o.claims.type, { ...claim, status: { ...claim.status, deliveries: [...others, d] } }, signal)
      .catch((err: unknown) => {
        throw new StatusNotWritten(err);
      });
    claim.status = stored.status;
    claim.metadata.resourceVersion = stored.metadata.resourceVersion;
  }

  /** Writes what this pass found, unless the status as last stored (read, or written by recordIntent) says it already. */
  private async writeStatus(claim: DeliveringClaim, results: Delivery[], signal: AbortSignal): Promise<void> {
    const last = claim.status ?? {};
    const status = { ...last } as NonNullable<DeliveringClaim['status']>;
    let conditions: Condition[] | undefined = status.conditions;
    if (results.length === 0) {
      delete status.deliveries;
      conditions = conditions?.filter((c) => c.type !== CONDITION_DELIVERED);
    } else {
      status.deliveries = results;
      const failed = results.find((d) => !d.delivered);
      conditions = setCondition(
        conditions,
        failed
          ? {
              type: CONDITION_DELIVERED,
              status: 'False',
              reason: failed.reason!,
              message: failed.message,
              observedGeneration: claim.metadata.generation,
            }
          : {
              type: CONDITION_DELIVERED,
              status: 'True',
              reason: Reasons.Delivered,
              message: `delivered to ${results.length} consumer${results.length === 1 ? '' : 's'}`,
              observedGeneration: claim.metadata.generation,
            },
      );
    }
    if (conditions?.length) status.conditions = conditions;
    else delete status.conditions;
    if (sameJson(status, last)) return;
    claim.status = status;
    const stored = await this.o.client.updateStatus(this.o.claims.type, claim, signal);
    claim.metadata.resourceVersion = stored.metadata.resourceVersion;
  }
}

const withKeys = (data: Record<string, string>): { keys?: string } => {
  const keys = keysDigest(data.AWS_ACCESS_KEY_ID);
  return keys ? { keys } : {};
};

/** A status write of recordIntent refused: the pass cannot go on, whatever other places it still has. */
class StatusNotWritten extends Error {
  readonly refusal: unknown;
  constructor(refusal: unknown) {
    super(refusal instanceof Error ? refusal.message : String(refusal));
    this.refusal = refusal;
  }
}

/**
 * A delivery that may have left a Secret of ours there. Its endpoint is recorded before anything is
 * written there, and kept by every pass after (failed or not) until it is removed: a place without one
 * was never written to, whatever its reason (its Provider's Secret missing, its server never answering).
 */
function mayHold(d: Delivery): boolean {
  return d.delivered || Boolean(d.removing) || d.endpoint !== undefined;
}

function failure(err: unknown): { reason: Reason | Reported; message: string } {
  if (err instanceof UnreachableError || (err instanceof Error && err.name === 'AbortError'))
    return { reason: Reasons.ConsumerUnreachable, message: `the consumer cluster cannot be reached: ${err.message}` };
  return { reason: reasonOf(err), message: (err as Error).message };
}

/** The claim as the owner its delivered Secrets are marked for. */
export function ownerOf(type: ResourceType, claim: DeliveringClaim): Owner {
  return { resource: resourceOf(type), namespace: claim.metadata.namespace!, name: claim.metadata.name, uid: claim.metadata.uid ?? '' };
}

export const resourceOf = (type: ResourceType): string => `${type.plural}.${type.apiVersion.split('/')[0]}`;
