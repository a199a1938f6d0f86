// What a BucketAccess holds, and how it is taken away: the grants' managed resources that name it
// (cached, and the one its spec.resourceRef names, read live), their revocation (the managed
// resource is deleted, and with it the user), the access's copy of the grant's Secret, and the mark
// of the Bucket they lend from. A grant outlives no access: one whose access is proven gone without
// releasing it (its finalizer removed by hand), made again under its name, or going without
// provider-rook's finalizer, is revoked all the same.
import type { EventRecorder } from '../../kit/controller/events.ts';
import { copyOf, type Cache, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { done, keyOf, type Result } from '../../kit/controller/result.ts';
import type { Client } from '../../kit/kube/client.ts';
import { readLive } from '../../kit/kube/live.ts';
import { formatObjectKey, parseObjectKey, type ObjectKey } from '../../kit/kube/object-key.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { isDeleting } from '../../kit/meta.ts';
import { ANNOTATION_GRANT_OF, LABEL_GRANTED } from '../labels.ts';
import { controllerUid, unpublishSecret, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import { claimRefOf, refersTo, type Claim } from './claim.ts';
import type { Held } from './release.ts';
import { grantHeld, type AccessClaim, type Sharing } from './sharing.ts';

export interface RevocationOptions {
  client: Client;
  recorder: EventRecorder;
  accesses: { type: ResourceType; cache: Cache<AccessClaim> };
  buckets: { type: ResourceType; cache: Cache<Claim & { spec?: { shareWith?: Sharing } }> };
  /** The managed resources grants make, by kind. */
  granted: { type: ResourceType; cache: Cache<ManagedResource> }[];
  secrets: Cache<SecretObject>;
}

export class Revocations {
  private readonly o: RevocationOptions;
  /** Accesses deleted since their last pass, as last seen (see revokeOrphaned). */
  private readonly lastSeen = new Map<string, AccessClaim>();

  constructor(o: RevocationOptions) {
    this.o = o;
  }

  /**
   * The Bucket carries LABEL_GRANTED while any BucketAccess holds a user of it, so that admission
   * refuses its deletion (config/admission/protection.yaml); the label goes with the last grant.
   * `releasing`: this access is going, and held a user of the Bucket.
   */
  async markBucket(access: AccessClaim, signal: AbortSignal, releasing = false): Promise<void> {
    const ref = access.spec?.bucketRef;
    if (ref) await this.mark(ref, { access, releasing }, signal);
  }

  /** The mark of the Bucket at `ref`, judged with `self` as this pass left it (none: only the accesses cached count). */
  private async mark(ref: ObjectKey, self: { access?: ReadonlyDeep<AccessClaim>; releasing: boolean }, signal: AbortSignal): Promise<void> {
    const bucket = this.o.buckets.cache.get(ref);
    if (!bucket || isDeleting(bucket.metadata)) return;
    const { access, releasing } = self;
    // Only an access the Bucket allows counts: a resourceRef is the app team's to write, so one in a
    // namespace the Bucket does not share with would otherwise mark (and keep) another team's Bucket.
    const holds = (a: ReadonlyDeep<AccessClaim>): boolean => !isDeleting(a.metadata) && grantHeld(bucket, a);
    const names = (a: ReadonlyDeep<AccessClaim>): boolean =>
      a.spec?.bucketRef?.namespace === ref.namespace && a.spec?.bucketRef?.name === ref.name;
    // This access as this pass left it (the cache may lag behind its writes); the others as cached.
    const granted =
      (access !== undefined && holds(access)) ||
      this.o.accesses.cache.list().some((a) => a.metadata.uid !== access?.metadata.uid && names(a) && holds(a));
    const marked = bucket.metadata.labels?.[LABEL_GRANTED] === 'true';
    // Going, the last access takes the mark off whatever its cache shows: the mark its own pass put
    // there may not have reached the cache yet, and after this pass none comes back for it.
    if (granted === marked && !(releasing && !granted)) return;
    await this.o.client.mergePatch(
      this.o.buckets.type,
      { namespace: ref.namespace, name: ref.name },
      { metadata: { labels: { [LABEL_GRANTED]: granted ? 'true' : null } } },
      signal,
    );
  }

  /** This access already holds its copy of the grant's Secret. */
  hasCopy(access: AccessClaim): boolean {
    const to = access.spec?.writeConnectionSecretToRef;
    const copy = to && this.o.secrets.get({ namespace: access.metadata.namespace, name: to.name });
    return Boolean(copy) && controllerUid(copy!) === access.metadata.uid;
  }

  /**
   * The users of an access gone without its finalizer's work (the finalizer removed by hand, then the
   * access deleted, maybe while provider-rook was down, maybe made again under its name): they would
   * stay, and keep reaching the bucket after its owner stops sharing it, or deletes it. A grant naming
   * this key whose access a live read proves gone (none of that name, or one with another uid than
   * the grant names) is revoked; `current` is the access cached under the key now, whose own grants
   * are not looked at. The mark of the Bucket a revoked grant lent from is judged again.
   */
  async revokeOrphaned(key: ObjectKey, current: ReadonlyDeep<AccessClaim> | undefined, signal: AbortSignal): Promise<void> {
    const kind = this.o.accesses.type.kind;
    const named = (mr: ReadonlyDeep<ManagedResource>): boolean => {
      const ref = claimRefOf(mr);
      if (ref?.kind !== kind || ref.namespace !== key.namespace || ref.name !== key.name || isDeleting(mr.metadata)) return false;
      return !current || (ref.uid !== undefined && ref.uid !== current.metadata.uid);
    };
    const orphans = this.o.granted.flatMap(({ type, cache }) =>
      cache
        .list()
        .filter(named)
        .map((mr) => ({ type, mr })),
    );
    const last = this.lastSeen.get(formatObjectKey(key));
    if (orphans.length) {
      const live = await readLive<AccessClaim>(this.o.client, this.o.accesses.type, key, signal);
      const buckets = new Set<string>();
      for (const { type, mr } of orphans) {
        const uid = claimRefOf(mr)?.uid;
        // There after all (a cache behind), or a grant that names no uid while one of that name lives: not provably another's.
        if (live && (!uid || live.metadata.uid === uid)) continue;
        const at = { namespace: mr.metadata.namespace, name: mr.metadata.name };
        if ((await this.o.client.delete(type, at, { uid: mr.metadata.uid, signal })) === 'absent') continue;
        this.o.recorder.normal(
          mr,
          Reasons.RevokedAccess,
          `its ${kind} ${key.namespace}/${key.name} is gone without releasing it: its user is revoked`,
        );
        const lentFrom = mr.metadata.annotations?.[ANNOTATION_GRANT_OF] ?? (last?.spec?.bucketRef && formatObjectKey(last.spec.bucketRef));
        if (lentFrom) buckets.add(lentFrom);
      }
      for (const b of buckets) await this.mark(parseObjectKey(b), { access: current, releasing: true }, signal);
    }
    // Forgotten once judged: a pass that failed keeps it for the next.
    if (!current) this.lastSeen.delete(formatObjectKey(key));
  }

  /** Going without our finalizer (another's holds it): its grants are revoked as a release would, nothing else is written of it. */
  async releaseUnfinalized(access: AccessClaim, signal: AbortSignal): Promise<Result> {
    const held = await this.held(access, signal);
    if (held.some((h) => !isDeleting(h.mr.metadata))) {
      await this.revoke(access, held, signal);
      await this.markBucket(access, signal, true);
    }
    return done();
  }

  /** An access as last seen before it went: where its grants' Bucket is, for that Bucket's mark. */
  forgotten(access: ReadonlyDeep<AccessClaim>): void {
    this.lastSeen.set(keyOf(access.metadata), copyOf<AccessClaim>(access));
  }

  /** Revokes whatever this access holds, and unmarks its Bucket once nothing holds it. */
  async revokeHeld(access: AccessClaim, signal: AbortSignal): Promise<void> {
    if (!this.heldCached(access).length && !access.spec?.resourceRef) {
      // Nothing held: a copy of a grant's Secret that outlived it (written as it was revoked) goes too.
      if (this.hasCopy(access)) await this.removeCopy(access, signal);
      return;
    }
    await this.revoke(access, await this.held(access, signal), signal);
    await this.markBucket(access, signal);
  }

  /** The grants' managed resources that name this access, as cached. */
  heldCached(access: AccessClaim): Held[] {
    return this.o.granted.flatMap(({ type, cache }) =>
      cache
        .list()
        .filter((mr) => refersTo(claimRefOf(mr), access))
        .map((mr) => ({ type, mr })),
    );
  }

  /**
   * What the access holds, to revoke: the cached grants, and the one its resourceRef names read live.
   * The cache may not have heard of a grant made a moment ago, and once the access is gone nothing
   * would revoke it.
   */
  async held(access: AccessClaim, signal: AbortSignal): Promise<Held[]> {
    const held = this.heldCached(access);
    const ref = access.spec?.resourceRef;
    const type =
      ref && this.o.granted.find((g) => g.type.kind === ref.kind && (!ref.apiVersion || g.type.apiVersion === ref.apiVersion))?.type;
    if (!ref?.namespace || !type) return held;
    const live = await this.o.client.get<ManagedResource>(type, { namespace: ref.namespace, name: ref.name }, signal);
    if (live && refersTo(claimRefOf(live), access) && !held.some((h) => h.mr.metadata.uid === live.metadata.uid))
      held.push({ type, mr: live });
    return held;
  }

  /**
   * Deletes the access's copy of a grant's Secret, if the access controls it. Not in the cache yet, its
   * arrival brings the access back, and a refused access holding nothing removes it then.
   */
  private async removeCopy(access: AccessClaim, signal: AbortSignal): Promise<void> {
    const to = access.spec?.writeConnectionSecretToRef;
    if (to)
      await unpublishSecret({ client: this.o.client, cache: this.o.secrets, signal }, access, {
        namespace: access.metadata.namespace!,
        name: to.name,
      });
  }

  async revoke(access: AccessClaim, held: Held[], signal: AbortSignal): Promise<void> {
    await this.revokeOnly(access, held, signal);
    // It holds nothing now: its resourceRef goes, so its Bucket no longer counts it as a grant.
    if (access.spec?.resourceRef) {
      const { resourceRef: _gone, ...spec } = access.spec;
      const updated = await this.o.client.update<AccessClaim>(this.o.accesses.type, { ...access, spec }, signal);
      access.metadata = updated.metadata;
      access.spec = updated.spec;
    }
    await this.removeCopy(access, signal);
  }

  /**
   * Revokes these grants (those not going already) and nothing else the access holds: its
   * resourceRef and its copy of the Secret, which name the grant it keeps.
   */
  async revokeOnly(access: AccessClaim, held: Held[], signal: AbortSignal): Promise<void> {
    for (const { type, mr } of held) {
      if (isDeleting(mr.metadata)) continue;
      await this.o.client.delete(type, { namespace: mr.metadata.namespace, name: mr.metadata.name }, { uid: mr.metadata.uid, signal });
      this.o.recorder.normal(
        access,
        Reasons.RevokedAccess,
        `Deleted ${type.kind} ${mr.metadata.namespace}/${mr.metadata.name}: its user is revoked`,
      );
    }
  }
}
