// Rotation waits for delivery: the keys a rotation replaced keep working past their grace period
// until every consumer of the claim holds the new ones (a consumer cluster down for longer than the
// grace period would otherwise be left with keys that no longer work). Each delivery records a
// digest of the access key id it wrote (never the key), compared with the resource's own Secret.
import { createHash } from 'node:crypto';
import type { Manager } from '../../kit/controller/manager.ts';
import { onChange } from '../../kit/controller/handlers.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { connectionSecrets } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { claimRefOf } from '../claims/claim.ts';
import type { DeliveringClaim } from './consumers.ts';

/** What a delivery records of the keys it wrote: a digest of the access key id (as the Secret holds it, base64). */
export const keysDigest = (accessKeyId: string | undefined): string | undefined =>
  accessKeyId ? createHash('sha256').update(accessKeyId).digest('hex').slice(0, 12) : undefined;

/** Why a resource's replaced keys must stay, and how it is woken once they need not. */
export interface RotationHold {
  /** The consumers of `mr`'s claim that do not hold its published keys yet, or undefined. */
  why(mr: ManagedResource): string | undefined;
  /**
   * Wakes `controller` (of managed kind `type`) when what its claims' consumers hold changes, so
   * keys a consumer no longer needs go at once rather than at the next recheck.
   */
  wake(type: ResourceType, controller: { enqueue(key: string): void }): void;
}

/** What the consumers of a claim hold, as its deliveries record it. */
const held = (claim: ReadonlyDeep<DeliveringClaim>): string =>
  JSON.stringify((claim.status?.deliveries ?? []).map((d) => [d.to, d.keys, Boolean(d.removing)]));

export function rotationHold(manager: Pick<Manager, 'informer'>, claims: ResourceType[]): RotationHold {
  const caches = new Map(claims.map((t) => [t.kind, manager.informer<DeliveringClaim>(t)]));
  const secrets = connectionSecrets(manager);
  const why = (mr: ManagedResource): string | undefined => {
    const ref = claimRefOf(mr);
    const named = ref?.kind && ref.namespace ? caches.get(ref.kind)?.get(ref) : undefined;
    // Only its own claim: another made since under that name (its user gone without releasing it) holds nothing of these keys.
    const claim = named && (!ref?.uid || named.metadata.uid === ref.uid) ? named : undefined;
    // Only consumers that hold keys of this claim: one never delivered to (not allowed, no endpoint,
    // its cluster down from the start) has none to keep working, and would hold them for ever.
    const deliveries = (claim?.status?.deliveries ?? []).filter((d) => !d.removing && d.keys);
    if (deliveries.length === 0) return undefined;
    const own = mr.spec.writeConnectionSecretToRef?.name;
    const published = keysDigest(own ? secrets.get({ namespace: mr.metadata.namespace, name: own })?.data?.AWS_ACCESS_KEY_ID : undefined);
    if (!published) return undefined;
    const behind = deliveries.filter((d) => d.keys !== published).map((d) => d.to);
    return behind.length ? `the previous keys stay until every consumer holds the new ones; not yet: ${behind.join(', ')}` : undefined;
  };
  const wake = (type: ResourceType, controller: { enqueue(key: string): void }): void => {
    for (const cache of caches.values())
      onChange(
        cache,
        (claim) => {
          const ref = claim.spec?.resourceRef;
          if (ref?.kind === type.kind && ref.apiVersion === type.apiVersion && ref.namespace)
            controller.enqueue(keyOf({ namespace: ref.namespace, name: ref.name }));
        },
        { on: ['updated'], when: (old, claim) => held(old) !== held(claim) },
      );
  };
  return { why, wake };
}
