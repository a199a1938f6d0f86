// The claim (binding) reconciler, after crossplane-runtime's portable-class era: claim → portable
// class → provider class → one managed resource, bound once it is ready, its connection Secret
// copied into the claim's namespace and kept in sync. Deleting the claim releases the resource and,
// with reclaim policy Delete, deletes it. Generic: the provider supplies only `configure`.
import { Ready, ReasonedError, Synced, reasonOf, setCondition, type Condition } from '../conditions.ts';
import type { EventRecorder } from '../events.ts';
import { sameJson } from '../json.ts';
import type { KubeClient, KubeObjectLike } from '../kube/client.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../kube/errors.ts';
import type { ResourceType } from '../kube/resources.ts';
import type { Logger } from '../logger.ts';
import { ANNOTATION_EXTERNAL_NAME, hasFinalizer, isDeleting, withFinalizer, withoutFinalizer } from '../meta.ts';
import { controllerUid, publishSecretData, unpublishSecret, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import { done, requeue, requeueAfter, type Reconciler, type Result } from '../result.ts';
import { managedNameFor, NOT_SCHEDULED, placementFor, referenceTo, refersTo, type Claim, type ObjectReference, type PlacingClass, type PortableClass } from './claim.ts';

export const FINALIZER_CLAIM = 'finalizer.resourceclaim.crossplane.io';

/** How long to wait before re-checking a claim that is stuck on something a watch may not report. */
const RECHECK_MS = 30_000;

export interface Cache<T> {
  get(key: string): T | undefined;
  list(): T[];
}

interface Kind<T> {
  type: ResourceType;
  cache: Cache<T>;
}

export interface ClaimReconcilerOptions<C extends KubeObjectLike, MR extends ManagedResource> {
  client: KubeClient;
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
  configure(claim: Claim, cls: C, name: string): MR;
  recorder: EventRecorder;
  log: Logger;
  /**
   * Every non-portable class kind a controller serves for this claim kind (one controller each,
   * seed 000). A claim whose class is of another served kind is that controller's: this one leaves
   * it alone, without a status write.
   */
  servedClasses?: ResourceType[];
  /** This controller answers the claims no served kind can take (a missing or unsupported class). */
  reportsUnserved?: boolean;
  /** Providers, to check a claim's providerSelector against a class's one Provider. */
  providers?: { get(key: string): { metadata: { labels?: Record<string, string> } } | undefined };
}

type Cond = Parameters<typeof setCondition>[1];

const binding = (message: string): Cond => ({ type: 'Ready', status: 'False', reason: 'Binding', message });

export class ClaimReconciler<C extends KubeObjectLike, MR extends ManagedResource> implements Reconciler {
  private readonly o: ClaimReconcilerOptions<C, MR>;

  constructor(opts: ClaimReconcilerOptions<C, MR>) {
    this.o = opts;
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.claims.cache.get(key);
    // A claim with neither a class nor a resource is the default-class controller's to fill in.
    if (!cached || (!cached.spec?.classRef && !cached.spec?.resourceRef && !isDeleting(cached.metadata))) return done();
    const server = this.serverOf(cached);
    // A lone controller (no list of served kinds) answers every claim.
    if (server === 'other' || (server === 'unserved' && !(this.o.reportsUnserved ?? this.o.servedClasses === undefined))) return done();
    const claim = structuredClone(cached);
    try {
      return isDeleting(claim.metadata) ? await this.release(claim, signal) : await this.bind(claim, cached, signal);
    } catch (err) {
      if (isConflict(err)) return requeue(); // a concurrent writer; the next pass reads fresh state
      if (isNotFound(err) && !(err instanceof ReasonedError)) return done();
      const message = (err as Error).message;
      this.o.recorder.warning(claim, err instanceof ReasonedError ? err.reason : 'CannotBindManagedResource', message);
      const ready = claim.spec?.resourceRef ? binding(message) : { ...Ready.creating(), message };
      const scheduled: Cond[] = NOT_SCHEDULED.has(reasonOf(err)) ? [{ type: 'Scheduled', status: 'False', reason: reasonOf(err), message }] : [];
      await this.writeStatus(claim, cached, signal, ready, Synced.error(reasonOf(err), message), undefined, scheduled).catch(() => undefined);
      // Refusals (a missing class, a namespace not allowed) wait for a change; API errors back off.
      return err instanceof ReasonedError ? requeueAfter(RECHECK_MS) : requeue();
    }
  }

  /**
   * Which controller a claim is for (crossplane's class-kind predicate): by the kind of the resource
   * it is bound to, else by the kind its portable class points at.
   */
  private serverOf(claim: Claim): 'mine' | 'other' | 'unserved' {
    const served = this.o.servedClasses ?? [this.o.classes.type];
    const ref = claim.spec?.resourceRef;
    if (ref?.kind) {
      const managed = this.o.managed.type;
      return ref.kind === managed.kind && (!ref.apiVersion || ref.apiVersion === managed.apiVersion) ? 'mine' : 'other';
    }
    const portable = claim.spec?.classRef && this.o.portableClasses.cache.get(`${claim.metadata.namespace}/${claim.spec.classRef.name}`);
    const kind = portable ? portable.classRef : undefined;
    if (!kind) return ref && !this.o.servedClasses ? 'mine' : 'unserved';
    const is = (t: ResourceType): boolean => t.kind === kind.kind && t.apiVersion === kind.apiVersion;
    if (is(this.o.classes.type)) return 'mine';
    return served.some(is) ? 'other' : 'unserved';
  }

  private async bind(claim: Claim, cached: Claim, signal: AbortSignal): Promise<Result> {
    if (!hasFinalizer(claim.metadata, FINALIZER_CLAIM)) {
      claim.metadata.finalizers = withFinalizer(claim.metadata, FINALIZER_CLAIM);
      claim = await this.updateClaim(claim, signal);
    }

    const ref = claim.spec?.resourceRef;
    let mr = await this.boundResource(claim, signal);
    // A claim only binds what a platform team reserved for it (its spec.claimRef names the claim).
    // Missing or another's, the answer is the same: an app team learns nothing of resources not its own.
    if (ref && (!mr || !refersTo(claimRefOf(mr), claim))) {
      throw new ReasonedError(Reasons.ManagedResourceNotFound, `spec.resourceRef names ${this.o.managed.type.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}, ` +
        'which does not exist or is not reserved for this claim: a platform team reserves one by setting its spec.claimRef to this claim');
    }
    if (!mr) ({ mr, claim } = await this.provision(claim, signal));

    const where = `${this.o.managed.type.kind} ${mr.metadata.namespace}/${mr.metadata.name}`;
    if (mr.metadata.ownerReferences?.some((r) => r.controller)) {
      throw new ReasonedError('ManagedResourceConflict', `refusing to bind to ${where}: it is controlled by another resource`);
    }
    const phase = mr.status?.bindingPhase;
    if (phase === 'Released') {
      throw new ReasonedError('ManagedResourceReleased', `${where} was released by an earlier claim and cannot be bound again`);
    }
    if (phase !== 'Unbound' && phase !== 'Bound') {
      const why = progressOf(mr);
      await this.writeStatus(claim, cached, signal, binding(`waiting for ${where} to become ready${why ? `: ${why}` : ''}`), syncedOf(mr), 'Unbound', mirrored(mr, claim));
      return done(); // the managed resource's watch brings us back
    }

    if (!(await this.propagate(claim, mr, signal))) {
      await this.writeStatus(claim, cached, signal, binding(`waiting for the connection Secret of ${where}`), syncedOf(mr), 'Unbound', mirrored(mr, claim));
      return done(); // the Secret watch brings us back
    }

    if (phase === 'Unbound') {
      await this.o.client.updateStatus(this.o.managed.type, { ...mr, status: { ...mr.status, bindingPhase: 'Bound' } }, signal);
      this.o.recorder.normal(claim, 'BoundManagedResource', `Bound to ${where}`);
    }
    // Once bound, the claim reports what its resource reports.
    const mrReady = readyOf(mr);
    const ready: Cond = mrReady ? { type: 'Ready', status: mrReady.status, reason: mrReady.reason, ...(mrReady.message ? { message: mrReady.message } : {}) } : Ready.available();
    await this.writeStatus(claim, cached, signal, ready, syncedOf(mr), 'Bound', mirrored(mr, claim));
    return done();
  }

  /** The managed resource the claim references (cache first; a fresh read covers a lagging cache). */
  private async boundResource(claim: Claim, signal: AbortSignal): Promise<MR | undefined> {
    const ref = claim.spec?.resourceRef;
    if (!ref?.namespace) return undefined;
    const found = this.o.managed.cache.get(`${ref.namespace}/${ref.name}`) ??
      (await this.o.client.get<MR>(this.o.managed.type, ref.name, ref.namespace, signal));
    return found && !isDeleting(found.metadata) ? structuredClone(found) : undefined;
  }

  /** Claim → portable class → provider class, each failure named precisely. */
  private resolveClass(claim: Claim): C {
    const ns = claim.metadata.namespace!;
    const portableName = claim.spec!.classRef!.name;
    const portable = this.o.portableClasses.cache.get(`${ns}/${portableName}`);
    const portableKind = this.o.portableClasses.type.kind;
    if (!portable) throw new ReasonedError('ClassNotFound', `${portableKind} ${ns}/${portableName} does not exist`);
    const ref = portable.classRef;
    const want = this.o.classes.type;
    if (!ref || ref.kind !== want.kind || ref.apiVersion !== want.apiVersion) {
      throw new ReasonedError('UnsupportedClass',
        `${portableKind} ${ns}/${portableName} points at ${ref ? `${ref.apiVersion} ${ref.kind}` : 'nothing'}; this provider serves ` +
        (this.o.servedClasses ?? [want]).map((t) => `${t.apiVersion} ${t.kind}`).join(', '));
    }
    const cls = this.o.classes.cache.get(`${ref.namespace}/${ref.name}`);
    if (!cls) throw new ReasonedError('ClassNotFound', `${want.kind} ${ref.namespace}/${ref.name} (named by ${portableKind} ${portableName}) does not exist`);
    return cls;
  }

  private async provision(claim: Claim, signal: AbortSignal): Promise<{ mr: MR; claim: Claim }> {
    // Adopting an existing external resource can hand over someone else's data and keys: that is a
    // platform team's decision, made on a managed resource, never an app team's through a claim.
    if (claim.metadata.annotations?.[ANNOTATION_EXTERNAL_NAME]) {
      throw new ReasonedError('ImportNotAllowed',
        `a claim cannot adopt an existing resource (annotation ${ANNOTATION_EXTERNAL_NAME}). Ask a platform team to create the managed ` +
        `${this.o.managed.type.kind} with that annotation and a spec.claimRef naming this claim, then set this claim's spec.resourceRef to it`);
    }
    const cls = this.resolveClass(claim);
    const name = managedNameFor(claim);
    const desired = this.o.configure(claim, cls, name);
    desired.metadata = { ...desired.metadata, name, namespace: cls.metadata.namespace };
    desired.spec = {
      ...desired.spec,
      ...placementFor(cls as unknown as PlacingClass, claim, this.o.providers ?? { get: () => undefined }),
      claimRef: referenceTo(claim), classRef: referenceTo(cls as KubeObjectLike & { metadata: { uid?: string } }),
    };
    let mr: MR;
    try {
      mr = await this.o.client.create(this.o.managed.type, desired, signal);
      this.o.recorder.normal(claim, 'CreatedManagedResource', `Created ${this.o.managed.type.kind} ${desired.metadata.namespace}/${name}`);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // Made by an earlier attempt that did not get to record it (a crash, a lost response).
      const existing = await this.o.client.get<MR>(this.o.managed.type, name, desired.metadata.namespace, signal);
      if (!existing || !refersTo(claimRefOf(existing), claim)) {
        throw new ReasonedError('ManagedResourceConflict', `${this.o.managed.type.kind} ${desired.metadata.namespace}/${name} exists and belongs to another claim`);
      }
      mr = existing;
    }
    claim.spec = { ...claim.spec, resourceRef: referenceTo(mr) };
    return { mr, claim: await this.updateClaim(claim, signal) };
  }

  /** Copies the managed resource's connection Secret to the claim's; false while there is none yet. */
  private async propagate(claim: Claim, mr: MR, signal: AbortSignal): Promise<boolean> {
    const to = claim.spec?.writeConnectionSecretToRef;
    const from = mr.spec.writeConnectionSecretToRef;
    if (!to || !from) return true;
    const source = this.o.secrets.get(`${mr.metadata.namespace}/${from.name}`);
    if (!source) return false;
    // Only a Secret the managed resource controls is trusted, so a claim cannot exfiltrate others.
    if (controllerUid(source) !== mr.metadata.uid) {
      throw new ReasonedError('ConnectionSecretConflict', `Secret ${mr.metadata.namespace}/${from.name} is not controlled by ${this.o.managed.type.kind} ${mr.metadata.name}`);
    }
    const current = this.o.secrets.get(`${claim.metadata.namespace}/${to.name}`);
    if (current && controllerUid(current) === claim.metadata.uid && sameJson(current.data ?? {}, source.data ?? {})) return true;
    if (await publishSecretData(this.o.client, claim, claim.metadata.namespace!, to.name, source.data ?? {}, signal)) {
      this.o.recorder.normal(claim, 'PropagatedConnectionSecret', `Wrote connection Secret ${to.name}`);
    }
    return true;
  }

  /** The claim is going away: release what it bound (deleting it under reclaim policy Delete). */
  private async release(claim: Claim, signal: AbortSignal): Promise<Result> {
    if (!hasFinalizer(claim.metadata, FINALIZER_CLAIM)) return done();
    const ref = claim.spec?.resourceRef;
    // A crash between creating the resource and recording it leaves it unreferenced: find it by its claimRef.
    const candidates = new Map<string, MR>();
    for (const mr of this.o.managed.cache.list()) if (refersTo(claimRefOf(mr), claim)) candidates.set(mr.metadata.uid!, mr);
    if (ref) {
      const live = await this.o.client.get<MR>(this.o.managed.type, ref.name, ref.namespace, signal);
      if (live && refersTo(claimRefOf(live), claim)) candidates.set(live.metadata.uid!, live);
    }
    for (const found of candidates.values()) await this.unbind(claim, structuredClone(found), signal);

    const to = claim.spec?.writeConnectionSecretToRef;
    if (to) await unpublishSecret(this.o.client, claim, claim.metadata.namespace!, to.name, signal);
    claim.metadata.finalizers = withoutFinalizer(claim.metadata, FINALIZER_CLAIM);
    await this.updateClaim(claim, signal);
    return done();
  }

  // Each step leaves the resource findable by its claimRef until the last one, so a conflict or a
  // crash part-way is finished by the next pass: never a resource left Bound to a claim now gone.
  private async unbind(claim: Claim, mr: MR, signal: AbortSignal): Promise<void> {
    const { type } = this.o.managed;
    const where = `${type.kind} ${mr.metadata.namespace}/${mr.metadata.name}`;
    // Released first, so it never shows as Bound while its deletion is pending.
    if (mr.status?.bindingPhase !== 'Released') {
      const released = await this.o.client.updateStatus<MR>(type, { ...mr, status: { ...mr.status, bindingPhase: 'Released' } }, signal).catch(ignoreNotFound);
      if (!released) return;
      mr = released;
    }
    if ((mr.spec.reclaimPolicy ?? 'Delete') === 'Delete') {
      await this.o.client.delete(type, mr.metadata.name, mr.metadata.namespace, { uid: mr.metadata.uid, signal });
      this.o.recorder.normal(claim, 'DeletedManagedResource', `Deleted ${where} (reclaim policy Delete)`);
      return;
    }
    const { claimRef: _, ...spec } = mr.spec;
    if (!(await this.o.client.update<MR>(type, { ...mr, spec: spec as MR['spec'] }, signal).catch(ignoreNotFound))) return;
    this.o.recorder.normal(claim, 'ReleasedManagedResource', `Released ${where}; it is kept (reclaim policy ${mr.spec.reclaimPolicy})`);
  }

  /** Updates the claim in place, so every later write in this pass carries the new resourceVersion. */
  private async updateClaim(claim: Claim, signal: AbortSignal): Promise<Claim> {
    const updated = await this.o.client.update<Claim>(this.o.claims.type, claim, signal);
    claim.metadata = updated.metadata;
    claim.spec = updated.spec;
    return claim;
  }

  /** Writes the claim's status only when it changed; `also` carries what it mirrors of its resource. */
  private async writeStatus(claim: Claim, cached: Claim, signal: AbortSignal, ready: Cond, synced: Cond, phase?: 'Unbound' | 'Bound',
    also: Cond[] | Mirrored = []): Promise<void> {
    const { conditions: extra, providerRef } = Array.isArray(also) ? { conditions: also, providerRef: undefined } : also;
    let conditions = claim.status?.conditions;
    for (const c of [ready, synced, ...extra]) conditions = setCondition(conditions, { ...c, observedGeneration: claim.metadata.generation });
    claim.status = { ...claim.status, conditions, ...(phase ? { bindingPhase: phase } : {}), ...(providerRef ? { providerRef } : {}) };
    if (sameJson(claim.status, cached.status ?? {})) return;
    await this.o.client.updateStatus(this.o.claims.type, claim, signal);
  }
}

interface Mirrored {
  conditions: Cond[];
  providerRef?: { name: string };
}

/** What a claim shows of its resource's placement: the Scheduled condition and the chosen Provider. */
function mirrored(mr: ManagedResource, claim: Claim): Mirrored {
  let scheduled: Cond | undefined = mr.status?.conditions?.find((c) => c.type === 'Scheduled');
  // Placed by its class (no scheduler, so no condition): a claim that once said it was not placed
  // (its selector did not match the class's Provider) says it is now.
  const said = claim.status?.conditions?.some((c) => c.type === 'Scheduled');
  if (!scheduled && said && mr.spec.providerRef?.name) scheduled = { type: 'Scheduled', status: 'True', reason: 'Scheduled', message: `on Provider ${mr.spec.providerRef.name}, named by its class` };
  return {
    conditions: scheduled ? [{ type: 'Scheduled', status: scheduled.status, reason: scheduled.reason, ...(scheduled.message ? { message: scheduled.message } : {}) }] : [],
    ...(mr.spec.providerRef?.name ? { providerRef: { name: mr.spec.providerRef.name } } : {}),
  };
}

function claimRefOf(mr: ManagedResource): ObjectReference | undefined {
  return mr.spec.claimRef as ObjectReference | undefined;
}

/** What holds a managed resource up: no Provider yet, its sync error, else why it is not ready. */
function progressOf(mr: ManagedResource): string | undefined {
  const scheduled = mr.status?.conditions?.find((c) => c.type === 'Scheduled');
  if (!mr.spec.providerRef) return scheduled?.status === 'False' ? `not scheduled (${scheduled.reason}): ${scheduled.message ?? ''}` : 'waiting for the scheduler to choose a Provider';
  const synced = mr.status?.conditions?.find((c) => c.type === 'Synced');
  return synced?.status === 'False' ? synced.message ?? synced.reason : readyOf(mr)?.message;
}

/** A claim is as Synced as its resource: a failure there (an unreachable target...) shows on the claim, with its reason. */
function syncedOf(mr: ManagedResource): Cond {
  const synced = mr.status?.conditions?.find((c) => c.type === 'Synced');
  return synced?.status === 'False' ? Synced.error(synced.reason, synced.message ?? synced.reason) : Synced.success();
}

function readyOf(mr: ManagedResource): Condition | undefined {
  return mr.status?.conditions?.find((c) => c.type === 'Ready');
}

function ignoreNotFound(err: unknown): undefined {
  if (isNotFound(err)) return undefined;
  throw err;
}
