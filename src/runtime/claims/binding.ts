// The claim (binding) reconciler, after crossplane-runtime's portable-class era: claim → portable
// class → provider class → one managed resource, bound once it is ready, its connection Secret
// copied into the claim's namespace and kept in sync. Deleting the claim releases the resource and,
// with reclaim policy Delete, deletes it. Generic: the provider supplies only `configure`. Just past
// 400 lines: binding and releasing share the claim's proofs of its resource, kept in one class.
import { copyOf, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { claimAsksFeatures, featuresFor, followFeatures, placeFeatures, type FeatureSupport } from './features.ts';
import { ReasonedError, getCondition } from '../../kit/conditions.ts';
import { addFinalizerOps, patchTested } from '../../kit/controller/finalizers.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { Client, KubeObjectLike } from '../../kit/kube/client.ts';
import { isAlreadyExists } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Logger } from '../../kit/logger.ts';
import { ANNOTATION_EXTERNAL_NAME, hasFinalizer, isDeleting } from '../../kit/meta.ts';
import { LABEL_PROTECTED } from '../labels.ts';
import { madeToCreate } from '../managed/creation.ts';
import type { SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { ProgressWrites } from '../progress.ts';
import { Reasons, Ready, Synced, reasonOf } from '../reasons.ts';
import { done, requeueAfter, type Reconciler, type Result } from '../../kit/controller/result.ts';
import {
  FINALIZER_CLAIM,
  claimRefOf,
  managedNameFor,
  placementFor,
  refuseUnwanted,
  referenceTo,
  refersTo,
  heldBy,
  type Claim,
  type Lookup,
  type ObjectReference,
  type PlacingClass,
  type PortableClass,
} from './claim.ts';
import type { Cache } from '../../kit/controller/informer.ts';
import { classNotFound, importNotAllowed, portableClassNotFound, resourceNotReserved, unsupportedClass } from './refusals.ts';
import { releaseClaim } from './release.ts';
import { copyConnectionSecret, type Copier } from './connection.ts';
import {
  binding,
  claimFailed,
  forwardRotationRequest,
  RECHECK_MS,
  recheck,
  writeClaimStatus,
  type ClaimReport,
  type ClaimWriter,
  type Cond,
  mirrored,
  progressOf,
  readyOf,
  syncedOf,
} from './status.ts';

export { FINALIZER_CLAIM, type Cache };

interface Kind<T> {
  type: ResourceType;
  cache: Cache<T>;
}

export interface ClaimReconcilerOptions<C extends KubeObjectLike, MR extends ManagedResource> {
  client: Client;
  claims: Kind<Claim>;
  portableClasses: Kind<PortableClass>;
  classes: Kind<C>;
  managed: Kind<MR>;
  /** Connection Secrets of the control cluster. */
  secrets: Cache<SecretObject>;
  /**
   * The provider's part: a managed resource named `name`, in the class's namespace, configured from
   * the class for this claim. It may refuse with a ReasonedError (e.g. the namespace is not allowed).
   */
  configure(claim: Claim, cls: C, name: string, lookup: Lookup): MR;
  /** What configure may read of the control cluster. */
  lookup?: Lookup;
  recorder: EventRecorder;
  log: Logger;
  /**
   * Whether a claim is this controller's (see routing.ts): claims are routed before the queue, and
   * checked again here, since a claim may change while queued. Unset: a lone controller takes every claim.
   */
  takes?(claim: ReadonlyDeep<Claim>): boolean;
  /** Providers, to check a claim's providerSelector against a class's one Provider. */
  providers?: Pick<Cache<{ metadata: { labels?: Record<string, string> } }>, 'get'>;
  /** The bucket features the backend has, and where they go in its managed resource (none: it refuses every one). */
  features?: FeatureSupport;
}

export class ClaimReconciler<C extends KubeObjectLike, MR extends ManagedResource> implements Reconciler {
  private readonly o: ClaimReconcilerOptions<C, MR>;
  private readonly writer: ClaimWriter;
  private readonly copier: Copier;

  constructor(opts: ClaimReconcilerOptions<C, MR>) {
    this.o = opts;
    this.writer = { client: opts.client, claims: opts.claims.type, recorder: opts.recorder, progress: new ProgressWrites() };
    this.copier = { client: opts.client, recorder: opts.recorder, secrets: opts.secrets };
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.claims.cache.get(key);
    // A claim with neither a class nor a resource is the default-class controller's to fill in.
    if (!cached || (!cached.spec?.classRef && !cached.spec?.resourceRef && !isDeleting(cached.metadata))) return done();
    if (this.o.takes && !this.o.takes(cached)) return done(); // another controller's now
    const claim = copyOf<Claim>(cached);
    try {
      return isDeleting(claim.metadata) ? await this.release(claim, signal) : await this.bind(claim, cached, signal);
    } catch (err) {
      return claimFailed(this.writer, claim, cached, err, signal);
    }
  }

  private async bind(claim: Claim, cached: ReadonlyDeep<Claim>, signal: AbortSignal): Promise<Result> {
    // One write before anything is made: the finalizer and, for a claim that gets a new resource,
    // the reference to it (its name is the claim's own, so a retry after a crash finds the same one).
    // A claim its class refuses gets the finalizer alone, as before, and then says why.
    let planned: ObjectReference | undefined;
    let refused: unknown;
    if (!claim.spec?.resourceRef)
      try {
        // Everything that may refuse the claim (its class, the namespace, placement) is asked first.
        planned = plannedFrom(this.o.managed.type, this.desired(claim));
      } catch (err) {
        refused = err;
      }
    if (planned || !hasFinalizer(claim.metadata, FINALIZER_CLAIM)) await this.recordBinding(claim, planned, signal);
    if (refused) throw refused;
    let mr = await this.reservedOrProvisioned(claim, signal);
    const where = `${this.o.managed.type.kind} ${mr.metadata.namespace}/${mr.metadata.name}`;
    if (mr.metadata.ownerReferences?.some((r) => r.controller)) {
      throw new ReasonedError(Reasons.ManagedResourceConflict, `refusing to bind to ${where}: it is controlled by another resource`);
    }
    const phase = mr.status?.bindingPhase;
    if (phase === 'Released') {
      throw new ReasonedError(Reasons.ManagedResourceReleased, `${where} was released by an earlier claim and cannot be bound again`);
    }
    // Reserved by name alone (a platform team's claimRef): it records this claim's uid, what proves the pairing to grants.
    if (!claimRefOf(mr)?.uid) mr = await this.recordClaimUid(claim, mr, signal);
    await forwardRotationRequest(this.o.client, this.o.managed.type, claim, mr, signal);
    // A bound claim's features follow it, as the class that made its resource fills and limits them now.
    const made = mr.spec.classRef as { name: string; namespace?: string } | undefined;
    const follows = made?.namespace && (this.o.features || claimAsksFeatures(claim));
    const cls = follows ? this.o.classes.cache.get({ namespace: made.namespace!, name: made.name }) : undefined;
    // A change of features its class refuses is said in Synced, but stops nothing else: the claim's
    // Secret follows its resource still (a rotation's new keys, before the old go), and so does its status.
    let refusedFeatures: ReasonedError | undefined;
    if (cls)
      await followFeatures(this.o, { claim, cls, mr }, signal).catch((err: unknown) => {
        if (!(err instanceof ReasonedError)) throw err;
        refusedFeatures = err;
        if (getCondition(claim.status?.conditions, 'Synced')?.reason !== err.reason)
          this.o.recorder.warning(claim, err.reason, err.message);
      });
    const synced = (): Cond => (refusedFeatures ? Synced.error(reasonOf(refusedFeatures), refusedFeatures.message) : syncedOf(mr));
    if (phase !== 'Unbound' && phase !== 'Bound') {
      const why = progressOf(mr);
      const deferred = await this.writeStatus(claim, cached, signal, {
        ready: binding(`waiting for ${where} to become ready${why ? `: ${why}` : ''}`),
        synced: synced(),
        phase: 'Unbound',
        also: mirrored(mr, claim),
      });
      // The managed resource's watch brings us back; the recheck, should its event be missed
      // (crossplane's claim reconciler waits the same way for a resource that is not ready).
      return recheck(RECHECK_MS, deferred);
    }
    if (!(await copyConnectionSecret(this.copier, claim, mr, this.o.managed.type.kind, signal))) {
      const deferred = await this.writeStatus(claim, cached, signal, {
        ready: binding(`waiting for the connection Secret of ${where}`),
        synced: synced(),
        phase: 'Unbound',
        also: mirrored(mr, claim),
      });
      return deferred ? requeueAfter(deferred) : done(); // the Secret watch brings us back
    }
    // A resource its class made for this claim is Bound by its own controller once ready (setBindable).
    if (phase === 'Unbound')
      await this.o.client.updateStatus(this.o.managed.type, { ...mr, status: { ...mr.status, bindingPhase: 'Bound' } }, signal);
    // Once bound, the claim reports what its resource reports.
    const newlyBound = claim.status?.bindingPhase !== 'Bound';
    const mrReady = readyOf(mr);
    const ready: Cond = mrReady
      ? { type: 'Ready', status: mrReady.status, reason: mrReady.reason, ...(mrReady.message ? { message: mrReady.message } : {}) }
      : Ready.available();
    const deferred = await this.writeStatus(claim, cached, signal, {
      ready,
      synced: synced(),
      phase: 'Bound',
      also: mirrored(mr, claim),
    });
    // Said once the claim's own status says it (a conflict there tries again, and says it then).
    if (newlyBound) {
      const secret = claim.spec?.writeConnectionSecretToRef?.name;
      this.o.recorder.normal(
        claim,
        Reasons.BoundManagedResource,
        `Bound to ${where}${secret ? `; connection Secret ${secret} written` : ''}`,
      );
    }
    // A resource at rest costs nothing; one on its way to Ready is rechecked, as above.
    return ready.status === 'True' && !deferred ? done() : recheck(RECHECK_MS, deferred);
  }

  /**
   * The resource the claim's resourceRef names, if reserved for it (its spec.claimRef names the
   * claim), or, where the reference is one we recorded for a resource not made yet, that one made now.
   */
  private async reservedOrProvisioned(claim: Claim, signal: AbortSignal): Promise<MR> {
    const ref = claim.spec!.resourceRef!;
    if (!this.o.managed.cache.get(ref) && this.unmade(ref, claim)) {
      const desired = this.desired(claim);
      const want = plannedFrom(this.o.managed.type, desired);
      if (ref.namespace !== want.namespace) {
        // Its class moved between planning and making: a claim's reference is fixed once recorded (the CRD says so).
        throw new ReasonedError(
          Reasons.ManagedResourceNotFound,
          `spec.resourceRef plans ${this.o.managed.type.kind} ${ref.namespace}/${ref.name}, but its class now makes resources in namespace ` +
            `${want.namespace}; a claim's resourceRef cannot change once set: delete this claim and make it again`,
        );
      }
      return this.provision(claim, desired, signal);
    }
    const mr = await this.boundResource(claim, signal);
    // Missing or another's, the answer is the same: an app team learns nothing of resources not its own.
    if (!mr || !refersTo(claimRefOf(mr), claim)) throw resourceNotReserved(this.o.managed.type.kind, ref);
    return mr;
  }

  /**
   * Whether a reference is one we recorded before making its resource, which is not made yet: it
   * names the claim's own resource name, and the claim never reported a binding phase (it does once
   * its resource exists). A resource deleted after that is never made again behind the app's back.
   */
  private unmade(ref: ObjectReference, claim: Claim): boolean {
    const { apiVersion, kind } = this.o.managed.type;
    return (
      ref.apiVersion === apiVersion &&
      ref.kind === kind &&
      ref.name === managedNameFor(claim) &&
      !!claim.spec?.classRef &&
      !claim.status?.bindingPhase
    );
  }

  /** The claim's uid in its resource's claimRef (the status as read is kept: an update does not write it). */
  private async recordClaimUid(claim: Claim, mr: MR, signal: AbortSignal): Promise<MR> {
    const updated = await this.o.client.update<MR>(
      this.o.managed.type,
      { ...mr, spec: { ...mr.spec, claimRef: referenceTo(claim) } },
      signal,
    );
    return { ...updated, status: mr.status };
  }

  /** The managed resource the claim references (cache first; a fresh read covers a lagging cache). */
  private async boundResource(claim: Claim, signal: AbortSignal): Promise<MR | undefined> {
    const ref = claim.spec?.resourceRef;
    if (!ref?.namespace) return undefined;
    const found =
      this.o.managed.cache.get(ref) ??
      (await this.o.client.get<MR>(this.o.managed.type, { namespace: ref.namespace, name: ref.name }, signal));
    return found && !isDeleting(found.metadata) ? (structuredClone(found) as MR) : undefined;
  }

  /** Claim → portable class → provider class, each failure named precisely. */
  private resolveClass(claim: Claim): C {
    const ns = claim.metadata.namespace!;
    const portableName = claim.spec!.classRef!.name;
    const portable = this.o.portableClasses.cache.get({ namespace: ns, name: portableName });
    const portableKind = this.o.portableClasses.type.kind;
    if (!portable) throw portableClassNotFound(portableKind, { namespace: ns, name: portableName });
    const ref = portable.classRef;
    const want = this.o.classes.type;
    if (!ref || ref.kind !== want.kind || ref.apiVersion !== want.apiVersion) throw unsupportedClass(portableKind, portable, [want]);
    const cls = this.o.classes.cache.get(ref);
    if (!cls) throw classNotFound(ref, portableKind, portableName);
    return copyOf<C>(cls);
  }

  /** The managed resource made from the claim's class, which its resourceRef already names. */
  private async provision(claim: Claim, desired: MR, signal: AbortSignal): Promise<MR> {
    const { name, namespace } = desired.metadata;
    let mr: MR;
    try {
      // No Event: the claim's resourceRef names it already, and BoundManagedResource follows.
      mr = await this.o.client.create(this.o.managed.type, madeToCreate(desired, new Date()), signal);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // Made by an earlier attempt that did not get to record it (a crash, a lost response).
      const existing = await this.o.client.get<MR>(this.o.managed.type, { namespace, name }, signal);
      if (existing && refersTo(claimRefOf(existing), claim) && isDeleting(existing.metadata))
        throw resourceNotReserved(this.o.managed.type.kind, claim.spec!.resourceRef!);
      if (!existing || !refersTo(claimRefOf(existing), claim)) {
        throw new ReasonedError(
          Reasons.ManagedResourceConflict,
          `${this.o.managed.type.kind} ${namespace}/${name} exists and belongs to another claim`,
        );
      }
      mr = existing;
    }
    return mr;
  }

  /** The managed resource the claim's class makes for it; refuses as the class, the namespace or placement does. */
  private desired(claim: Claim): MR {
    if (claim.metadata.annotations?.[ANNOTATION_EXTERNAL_NAME]) throw importNotAllowed(this.o.managed.type.kind);
    const cls = this.resolveClass(claim);
    const name = managedNameFor(claim);
    const desired = this.o.configure(claim, cls, name, this.o.lookup ?? noLookup);
    const features = featuresFor(claim, cls as KubeObjectLike & { metadata: { name: string } }, this.o.features);
    if (this.o.features) placeFeatures(desired.spec as Record<string, unknown>, this.o.features, features);
    desired.metadata = { ...desired.metadata, name, namespace: cls.metadata.namespace };
    // A class that protects its claims marks each resource; the claim mirrors it, and admission refuses their deletion.
    if ((cls as { spec?: { protectClaims?: boolean } }).spec?.protectClaims) {
      desired.metadata.labels = { ...desired.metadata.labels, [LABEL_PROTECTED]: 'true' };
    }
    const providers = this.o.providers ?? { get: () => undefined };
    // A class that places by what it shares (a store's Provider) has configure say where, which the
    // claim's providerSelector must match all the same; else the class's placement.
    if (desired.spec.providerRef) refuseUnwanted(cls as unknown as PlacingClass, desired.spec.providerRef.name, claim, providers);
    desired.spec = {
      ...desired.spec,
      ...(desired.spec.providerRef ? {} : placementFor(cls as unknown as PlacingClass, claim, providers)),
      claimRef: referenceTo(claim),
      classRef: referenceTo(cls as KubeObjectLike & { metadata: { uid?: string } }),
    };
    return desired;
  }

  /** The claim is going away: release what it bound (deleting it under reclaim policy Delete). */
  private async release(claim: Claim, signal: AbortSignal): Promise<Result> {
    if (!hasFinalizer(claim.metadata, FINALIZER_CLAIM)) return done();
    const ref = claim.spec?.resourceRef;
    // A crash between creating the resource and recording it leaves it unreferenced: find it by its claimRef.
    const candidates = new Map<string, ReadonlyDeep<MR>>();
    for (const mr of this.o.managed.cache.list()) if (heldBy(mr, claim)) candidates.set(mr.metadata.uid!, mr);
    if (ref) {
      const live = await this.o.client.get<MR>(this.o.managed.type, { namespace: ref.namespace, name: ref.name }, signal);
      if (live && heldBy(live as ReadonlyDeep<MR>, claim)) candidates.set(live.metadata.uid!, live as ReadonlyDeep<MR>);
    }
    const type = this.o.managed.type;
    await releaseClaim(
      this.writer,
      claim,
      [...candidates.values()].map((mr) => ({ type, mr })),
      signal,
    );
    return done();
  }

  /**
   * The finalizer and the planned resourceRef in one JSON patch whose tests fail if either changed
   * since our read (finalizers.ts): another writer's labels are kept, a stale copy is no conflict.
   * Updates the claim in place, so every later write in this pass carries the new resourceVersion.
   */
  private async recordBinding(claim: Claim, planned: ObjectReference | undefined, signal: AbortSignal): Promise<void> {
    const operations = [
      ...addFinalizerOps(claim, FINALIZER_CLAIM),
      // The class it was planned from must still be the claim's, and the reference what we read.
      ...(planned
        ? [
            { op: 'test', path: '/spec/classRef', value: claim.spec?.classRef ?? null },
            { op: 'test', path: '/spec/resourceRef', value: null },
            { op: 'add', path: '/spec/resourceRef', value: planned },
          ]
        : []),
    ];
    const patched = await patchTested(this.o.client, this.o.claims.type, claim, operations, signal);
    claim.metadata = patched.metadata;
    claim.spec = patched.spec;
  }

  private writeStatus(claim: Claim, cached: ReadonlyDeep<Claim>, signal: AbortSignal, report: ClaimReport): Promise<number> {
    return writeClaimStatus(this.writer, { claim, cached, signal }, report);
  }
}

/** The reference a claim records to the resource it is to get, before it is made (no uid yet). */
function plannedFrom({ apiVersion, kind }: ResourceType, desired: ManagedResource): ObjectReference {
  return { apiVersion, kind, name: desired.metadata.name, namespace: desired.metadata.namespace };
}

const noLookup: Lookup = {
  get: () => {
    throw new Error('this class binding reads nothing through a lookup');
  },
};
