// Access grants, in COSI's spirit: a BucketAccess claim in one namespace names a Bucket claim in
// another, and a mode; when that Bucket's spec.shareWith lists the namespace and the mode, the
// bucket's backend makes a managed resource holding a user of its own on that bucket (Grantor), and
// its connection Secret is copied into the BucketAccess's namespace. The bucket's owners decide, on
// the object they own: taking the namespace or mode off the list, or deleting the Bucket, revokes
// the user (its managed resource is deleted), and deleting the BucketAccess does too (revocation.ts).
import { copyOf, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError, getCondition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { addFinalizer } from '../../kit/controller/finalizers.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isAlreadyExists, KubeError } from '../../kit/kube/errors.ts';
import { type ResourceType } from '../../kit/kube/resources.ts';
import { isDeleting, hasFinalizer } from '../../kit/meta.ts';
import { ANNOTATION_GRANT_OF } from '../labels.ts';
import { policyOf } from '../managed/policies.ts';
import type { SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons, Ready, Synced, reported } from '../reasons.ts';
import { done, requeueAfter, type Reconciler, type Result } from '../../kit/controller/result.ts';
import { formatObjectKey, parseObjectKey } from '../../kit/kube/object-key.ts';
import { FINALIZER_CLAIM, claimRefOf, managedNameFor, referenceTo, refersTo, type Claim } from './claim.ts';
import type { Cache } from '../../kit/controller/informer.ts';
import { releaseClaim } from './release.ts';
import { copyConnectionSecret } from './connection.ts';
import { binding, claimFailed, forwardRotationRequest, RECHECK_MS, rotationOf, writeClaimStatus, type ClaimWriter } from './status.ts';
import { refusal, type AccessClaim, type AccessMode, type Sharing } from './sharing.ts';
import type { Held } from './release.ts';
import { Revocations } from './revocation.ts';

export type { AccessClaim, AccessMode } from './sharing.ts';

/** How a backend lends its bucket: the managed resource of a user of it, in a mode (made in the bucket's resource's namespace). */
export interface Grantor {
  /** The bucket claim's managed kind. */
  managed: ResourceType;
  /** The kind grant() makes. */
  grants: ResourceType;
  /** A user of `bucket`'s own bucket; refuses (ReasonedError) a resource that owns no bucket it may lend. */
  grant(bucket: ManagedResource, mode: AccessMode, name: string): ManagedResource;
  /** Which bucket a grant's resource reaches (its Provider, store and bucket name), to compare a grant made earlier with one made now. */
  reaches(grant: ManagedResource): string;
}

/** Whether a grant held reaches the bucket that `desired`, a grant of the bucket lent now, would. */
function reachesSame(grantor: Grantor, { type, mr }: Held, desired: ManagedResource): boolean {
  const same = type.kind === grantor.grants.kind && type.apiVersion === grantor.grants.apiVersion;
  return same && grantor.reaches(copyOf<ManagedResource>(mr)) === grantor.reaches(desired);
}

export interface AccessReconcilerOptions {
  client: Client;
  recorder: EventRecorder;
  accesses: { type: ResourceType; cache: Cache<AccessClaim> };
  buckets: { type: ResourceType; cache: Cache<Claim & { spec?: { shareWith?: Sharing } }> };
  grantors: Grantor[];
  /** The managed resources Buckets bind, by kind: a grant is made only on one whose claimRef names its Bucket. */
  lent: { type: ResourceType; cache: Cache<ManagedResource> }[];
  /** The managed resources grants make, by kind. */
  granted: { type: ResourceType; cache: Cache<ManagedResource> }[];
  secrets: Cache<SecretObject>;
}

export class AccessReconciler implements Reconciler {
  private readonly o: AccessReconcilerOptions;
  private readonly writer: ClaimWriter;
  /** What an access holds, and how it is revoked (revocation.ts). */
  readonly revocations: Revocations;

  constructor(o: AccessReconcilerOptions) {
    this.o = o;
    this.writer = { client: o.client, claims: o.accesses.type, recorder: o.recorder };
    this.revocations = new Revocations(o);
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.accesses.cache.get(key);
    if (!cached) {
      await this.revocations.revokeOrphaned(parseObjectKey(key), undefined, signal);
      return done();
    }
    const access = copyOf<AccessClaim>(cached);
    try {
      // What an earlier access of this name held (deleted and made again, its finalizer stripped) is not this one's.
      await this.revocations.revokeOrphaned(parseObjectKey(key), cached, signal);
      if (isDeleting(access.metadata)) {
        // Going, our finalizer taken off by someone else while another holds it: what it holds is revoked all the same.
        if (!hasFinalizer(access.metadata, FINALIZER_CLAIM)) return await this.revocations.releaseUnfinalized(access, signal);
        // The Bucket's mark goes before the finalizer: a pass cut off after it would find nothing to do.
        const held = await this.revocations.held(access, signal);
        await releaseClaim(this.writer, access, held, signal, () => this.revocations.markBucket(access, signal, held.length > 0));
        return done();
      }
      return await this.grant(access, cached, signal);
    } catch (err) {
      return claimFailed(this.writer, access, cached, err, signal);
    }
  }

  private async grant(access: AccessClaim, cached: ReadonlyDeep<AccessClaim>, signal: AbortSignal): Promise<Result> {
    if (!hasFinalizer(access.metadata, FINALIZER_CLAIM)) {
      const patched = await addFinalizer(this.o.client, this.o.accesses.type, access, FINALIZER_CLAIM, signal);
      access.metadata = patched.metadata;
    }
    const ref = access.spec!.bucketRef!;
    const mode = access.spec!.mode!;
    const bucket = this.o.buckets.cache.get(ref);
    const refused = refusal(bucket, access, mode);
    if (refused) {
      // What was allowed and is no more is revoked: its user goes with its managed resource. Only an
      // access that held a user touches the Bucket's mark: one the Bucket never allowed writes nothing there.
      await this.revocations.revokeHeld(access, signal);
      throw refused;
    }
    const bucketRef = bucket!.spec?.resourceRef;
    const where = `Bucket ${ref.namespace}/${ref.name}`;
    const grantor = bucketRef && this.grantorFor(bucketRef);
    if (bucket!.status?.bindingPhase !== 'Bound' || !bucketRef) {
      // A Bucket only waiting (its resource not ready, its Secret on its way) keeps the users it lent; one
      // whose pairing no longer holds does not. Nor one bound to nothing: a Bucket made anew under the
      // name (the one that lent them is gone, its bucket often kept) lends nothing yet.
      const held = this.revocations.heldCached(access);
      if (held.length) {
        if (!bucketRef) await this.revocations.revokeHeld(access, signal);
        else if (grantor) {
          // Those made for a bucket other than the one lent now go (a Bucket made anew under the name,
          // its new resource not ready yet: the grant of the one before reaches that one's bucket).
          const { desired } = await this.proven(access, bucket!, grantor, bucketRef, signal);
          const elsewhere = held.filter((h) => !reachesSame(grantor, h, desired));
          if (elsewhere.length === held.length) await this.revocations.revokeHeld(access, signal);
          else if (elsewhere.length) await this.revocations.revokeOnly(access, elsewhere, signal);
        } else if (!this.o.grantors.some((g) => g.managed.kind === bucketRef.kind)) await this.revocations.revokeHeld(access, signal);
      }
      await writeClaimStatus(
        this.writer,
        { claim: access, cached, signal },
        { ready: binding(`waiting for ${where} to be bound`), synced: Synced.success(), phase: 'Unbound' },
      );
      return done(); // the Bucket's changes bring it back
    }
    if (!grantor) {
      // A Bucket now bound to a kind no grant reaches at all (made anew under the same name): what
      // was granted of the one before is revoked. Not for a kind some grantor knows under another apiVersion.
      if (!this.o.grantors.some((g) => g.managed.kind === bucketRef.kind)) await this.revocations.revokeHeld(access, signal);
      throw new ReasonedError(
        Reasons.GrantsNotSupported,
        `${where} is a ${bucketRef.kind ?? 'resource'}, whose buckets provider-rook cannot share (grants reach MinIO stores only)`,
      );
    }
    const { lent, desired, paused } = await this.proven(access, bucket!, grantor, bucketRef, signal);
    // Paused, the grant held of the bucket lent now goes on as it is, and none is made; others go below.
    // Read as the access records it too: one made by the pass before may not be cached yet.
    const held = paused ? await this.revocations.held(access, signal) : [];
    const kept = held.find((h) => reachesSame(grantor, h, desired));
    if (paused && !kept) {
      await this.revocations.revokeHeld(access, signal);
      await writeClaimStatus(
        this.writer,
        { claim: access, cached, signal },
        { ready: binding(`waiting: ${paused}`), synced: Synced.error(Reasons.ReconcilePaused, paused), phase: 'Unbound' },
      );
      return requeueAfter(RECHECK_MS);
    }
    const granted = kept ? copyOf<ManagedResource>(kept.mr) : await this.ensureGranted(access, grantor, { lent, desired }, signal);
    // An access holds one grant, beside the resource its Bucket lends now: one made beside another (a
    // Bucket made anew under the name, bound in another namespace) reaches a bucket no one lends it.
    const elsewhere = this.revocations.heldCached(access).filter((h) => h.mr.metadata.uid !== granted.metadata.uid);
    if (elsewhere.length) await this.revocations.revokeOnly(access, elsewhere, signal);
    if (isDeleting(granted.metadata)) {
      // A user revoked earlier is still going: a new one is made once it is gone (its deletion brings us back).
      const what = `${grantor.grants.kind} ${granted.metadata.namespace}/${granted.metadata.name}`;
      await writeClaimStatus(
        this.writer,
        { claim: access, cached, signal },
        { ready: binding(`waiting for the revoked ${what} to be gone`), synced: Synced.success(), phase: 'Unbound' },
      );
      return requeueAfter(RECHECK_MS);
    }
    await forwardRotationRequest(this.o.client, grantor.grants, access, granted, signal);
    const ready = getCondition(granted.status?.conditions, 'Ready');
    const what = `${grantor.grants.kind} ${granted.metadata.namespace}/${granted.metadata.name}`;
    // A copy made before follows the grant's Secret even while the grant is not Ready: what it withholds (an endpoint it cannot prove) leaves the copy too.
    const copied =
      (ready?.status === 'True' || this.revocations.hasCopy(access)) &&
      (await copyConnectionSecret(this.o, access, granted, grantor.grants.kind, signal));
    if (ready?.status !== 'True' || !copied) {
      const synced = getCondition(granted.status?.conditions, 'Synced');
      await writeClaimStatus(
        this.writer,
        { claim: access, cached, signal },
        {
          ready: binding(`waiting for ${what}: ${ready?.message ?? 'not ready yet'}`),
          synced: synced?.status === 'False' ? Synced.error(reported(synced.reason), synced.message ?? synced.reason) : Synced.success(),
          phase: 'Unbound',
        },
      );
      return requeueAfter(RECHECK_MS);
    }
    await writeClaimStatus(
      this.writer,
      { claim: access, cached, signal },
      { ready: Ready.available(), synced: Synced.success(), phase: 'Bound', also: rotationOf(granted) },
    );
    await this.revocations.markBucket(access, signal);
    return done();
  }

  /** The grantor of the resource a Bucket names (by kind; by apiVersion too where the reference has one). */
  private grantorFor(ref: NonNullable<Claim['spec']>['resourceRef'] & object): Grantor | undefined {
    return this.o.grantors.find((g) => g.managed.kind === ref.kind && (!ref.apiVersion || g.managed.apiVersion === ref.apiVersion));
  }

  /**
   * The resource the Bucket lends and the user this access would get of it, once the pairing is
   * proven. A refusal revokes what the access holds; an API error (a read that failed) revokes nothing.
   */
  private async proven(
    access: AccessClaim,
    bucket: ReadonlyDeep<Claim>,
    grantor: Grantor,
    bucketRef: NonNullable<Claim['spec']>['resourceRef'] & object,
    signal: AbortSignal,
  ): Promise<{ lent: ReadonlyDeep<ManagedResource>; desired: ManagedResource; paused?: string }> {
    try {
      const lent = await this.lentResource(bucket, grantor, bucketRef, signal);
      const policy = policyOf(lent.spec as { managementPolicies?: string[] });
      // A grant makes a user in the lent resource's store: nothing is made where its policies let
      // provider-rook make nothing (an import only observed). Paused (no policies) is not that: what
      // it lent stays, and nothing new is made until it is not (grant() says so).
      if (!policy.create && !policy.paused)
        throw new ReasonedError(
          Reasons.GrantsNotSupported,
          `${lent.kind} ${lent.metadata.namespace}/${lent.metadata.name} is not managed to make anything (its spec.managementPolicies do not include Create): provider-rook makes no user in its store, so it lends nothing`,
        );
      const desired = grantor.grant(copyOf<ManagedResource>(lent), access.spec!.mode!, managedNameFor(access));
      const paused = policy.paused
        ? `${lent.kind} ${lent.metadata.namespace}/${lent.metadata.name} is paused (its spec.managementPolicies are empty): no grant of it is made until it is not`
        : undefined;
      return { lent, desired, ...(paused ? { paused } : {}) };
    } catch (err) {
      if (err instanceof ReasonedError) await this.revocations.revokeHeld(access, signal);
      throw err;
    }
  }

  /**
   * The resource the Bucket is bound to, proven from its own side: its spec.claimRef names this very
   * Bucket (uid included), and it is not going away. Missing or another's, the answer is the same, so
   * a namespace learns nothing of resources that are not its own.
   */
  private async lentResource(
    bucket: ReadonlyDeep<Claim>,
    grantor: Grantor,
    bucketRef: NonNullable<Claim['spec']>['resourceRef'] & object,
    signal: AbortSignal,
  ): Promise<ReadonlyDeep<ManagedResource>> {
    const namespace = bucketRef.namespace ?? '';
    const cache = this.o.lent.find((l) => l.type.kind === grantor.managed.kind && l.type.apiVersion === grantor.managed.apiVersion)?.cache;
    const mr =
      cache?.get({ namespace, name: bucketRef.name }) ??
      (namespace ? await this.o.client.get<ManagedResource>(grantor.managed, { namespace, name: bucketRef.name }, signal) : undefined);
    const claimRef = mr && claimRefOf(mr);
    if (!mr || isDeleting(mr.metadata) || !refersTo(claimRef, bucket) || !claimRef?.uid) {
      throw new ReasonedError(
        Reasons.ManagedResourceNotFound,
        `Bucket ${bucket.metadata.namespace}/${bucket.metadata.name} is not bound to a resource of its own: ` +
          `the ${grantor.managed.kind} its spec.resourceRef names does not exist, is going away, or is not reserved for it; nothing is granted`,
      );
    }
    return mr;
  }

  /**
   * The grant's managed resource, made once (named after the access, so a retry finds it). One made
   * earlier that reaches another bucket than the one lent now is revoked, and made again on the next pass.
   */
  private async ensureGranted(
    access: AccessClaim,
    grantor: Grantor,
    { lent, desired }: { lent: ReadonlyDeep<ManagedResource>; desired: ManagedResource },
    signal: AbortSignal,
  ): Promise<ReadonlyDeep<ManagedResource>> {
    const name = managedNameFor(access);
    // Made beside the resource it lends from (the class's namespace).
    const namespace = lent.metadata.namespace!;
    const cache = this.o.granted.find((g) => g.type.kind === grantor.grants.kind)?.cache;
    let mr: ReadonlyDeep<ManagedResource> | undefined =
      cache?.get({ namespace, name }) ?? (await this.o.client.get<ManagedResource>(grantor.grants, { namespace, name }, signal));
    if (!mr) {
      // Named before it is made, as a Bucket names its resource: a deletion of this access that comes
      // before the grant's cache hears of it still finds it (by a live read of this reference), and revokes it.
      await this.recordReference(access, { apiVersion: grantor.grants.apiVersion, kind: grantor.grants.kind, name, namespace }, signal);
      // Which Bucket it lends from: its mark is judged again if the grant has to go without its access.
      const grantOf = { [ANNOTATION_GRANT_OF]: formatObjectKey(access.spec!.bucketRef!) };
      desired.metadata = { ...desired.metadata, name, namespace, annotations: { ...desired.metadata.annotations, ...grantOf } };
      desired.spec = { ...desired.spec, claimRef: referenceTo(access) };
      let made = true;
      mr = await this.o.client.create(grantor.grants, desired, signal).catch(async (err: unknown) => {
        if (!isAlreadyExists(err)) throw err;
        made = false;
        // Made by an earlier pass (its cache behind); gone again by the time it is read: the next pass makes it anew.
        const there = await this.o.client.get<ManagedResource>(grantor.grants, { namespace, name }, signal);
        if (!there) throw new KubeError(409, 'Conflict', `${grantor.grants.kind} ${namespace}/${name} went while it was being made`);
        return there;
      });
      if (made) this.o.recorder.normal(access, Reasons.CreatedManagedResource, `Created ${grantor.grants.kind} ${namespace}/${name}`);
    }
    if (!refersTo(claimRefOf(mr), access)) {
      throw new ReasonedError(
        Reasons.ManagedResourceConflict,
        `${grantor.grants.kind} ${namespace}/${name} exists and belongs to another claim`,
      );
    }
    if (!isDeleting(mr.metadata) && grantor.reaches(copyOf<ManagedResource>(mr)) !== grantor.reaches(desired)) {
      await this.revocations.revoke(access, [{ type: grantor.grants, mr }], signal);
      throw new ReasonedError(
        Reasons.AccessNotAllowed,
        `${grantor.grants.kind} ${namespace}/${name} reached another bucket than the one Bucket ${access.spec!.bucketRef!.namespace}/${access.spec!.bucketRef!.name} is bound to: it was revoked`,
      );
    }
    if (access.spec?.resourceRef?.uid !== mr.metadata.uid) await this.recordReference(access, referenceTo(mr), signal);
    return mr;
  }

  /** Points the access's spec.resourceRef at `want` (its uid once the grant is made). */
  private async recordReference(
    access: AccessClaim,
    want: NonNullable<Claim['spec']>['resourceRef'] & object,
    signal: AbortSignal,
  ): Promise<void> {
    const had = access.spec?.resourceRef;
    if (had && had.name === want.name && had.namespace === want.namespace && had.kind === want.kind && had.uid === want.uid) return;
    // One pointing elsewhere (written by hand) is cleared first: the CRD refuses pointing it elsewhere in one step.
    if (had && (had.name !== want.name || had.namespace !== want.namespace || had.kind !== want.kind)) {
      const { resourceRef: _elsewhere, ...spec } = access.spec!;
      const cleared = await this.o.client.update<AccessClaim>(this.o.accesses.type, { ...access, spec }, signal);
      access.metadata = cleared.metadata;
    }
    access.spec = { ...access.spec, resourceRef: want };
    const updated = await this.o.client.update<AccessClaim>(this.o.accesses.type, access, signal);
    access.metadata = updated.metadata;
  }
}
