// Rotation waits for delivery: the keys a rotation replaced keep working past their grace period
// until every consumer of the claim holds the new ones (a consumer cluster down for longer than the
// grace period would otherwise be left with keys that no longer work). Each delivery records a
// digest of the access key id it wrote (never the key), compared with the resource's own Secret.
import { createHash } from 'node:crypto';
import type { Manager } from '../../kit/controller/manager.ts';
import { connectionSecrets } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { claimRefOf } from '../claims/claim.ts';
import type { DeliveringClaim } from './consumers.ts';

/** What a delivery records of the keys it wrote: a digest of the access key id (as the Secret holds it, base64). */
export const keysDigest = (accessKeyId: string | undefined): string | undefined =>
  accessKeyId ? createHash('sha256').update(accessKeyId).digest('hex').slice(0, 12) : undefined;

/** Why `mr`'s replaced keys must stay: the consumers of its claim that do not hold its published keys yet. */
export function rotationHold(manager: Manager, claims: ResourceType[]): (mr: ManagedResource) => string | undefined {
  const caches = new Map(claims.map((t) => [t.kind, manager.informer<DeliveringClaim>(t)]));
  const secrets = connectionSecrets(manager);
  return (mr) => {
    const ref = claimRefOf(mr);
    const claim = ref?.kind && ref.namespace ? caches.get(ref.kind)?.get(ref) : undefined;
    const deliveries = (claim?.status?.deliveries ?? []).filter((d) => !d.removing);
    if (deliveries.length === 0) return undefined;
    const own = mr.spec.writeConnectionSecretToRef?.name;
    const published = keysDigest(own ? secrets.get({ namespace: mr.metadata.namespace, name: own })?.data?.AWS_ACCESS_KEY_ID : undefined);
    if (!published) return undefined;
    const behind = deliveries.filter((d) => d.keys !== published).map((d) => d.to);
    return behind.length ? `the previous keys stay until every consumer holds the new ones; not yet: ${behind.join(', ')}` : undefined;
  };
}
