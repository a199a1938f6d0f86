// A claim's copy of its managed resource's connection Secret, for both claim kinds (a Bucket's
// resource, a BucketAccess's grant): copied into the claim's own namespace, and kept in sync.
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { sameJson } from '../../kit/json.ts';
import type { Client } from '../../kit/kube/client.ts';
import { controllerUid, publishSecretData, type SecretObject } from '../managed/publisher.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import type { Claim } from './claim.ts';
import type { Cache } from '../../kit/controller/informer.ts';

export interface Copier {
  client: Client;
  recorder: EventRecorder;
  /** Connection Secrets of the control cluster (an informer: once synced, a miss is answer enough to create). */
  secrets: Cache<SecretObject> & { readonly hasSynced?: boolean };
}

/** Copies the resource's connection Secret to the claim's; false while there is none yet. */
export async function copyConnectionSecret(
  c: Copier,
  claim: Claim,
  mr: ReadonlyDeep<ManagedResource>,
  kind: string,
  signal: AbortSignal,
): Promise<boolean> {
  const to = claim.spec?.writeConnectionSecretToRef;
  const from = mr.spec.writeConnectionSecretToRef;
  if (!to || !from) return true;
  const source = c.secrets.get({ namespace: mr.metadata.namespace, name: from.name });
  if (!source) return false;
  // Only a Secret the managed resource controls is trusted, so a claim cannot exfiltrate others.
  if (controllerUid(source) !== mr.metadata.uid) {
    throw new ReasonedError(
      Reasons.ConnectionSecretConflict,
      `Secret ${mr.metadata.namespace}/${from.name} is not controlled by ${kind} ${mr.metadata.name}`,
    );
  }
  const current = c.secrets.get({ namespace: claim.metadata.namespace, name: to.name });
  if (current && controllerUid(current) === claim.metadata.uid && sameJson(current.data ?? {}, source.data ?? {})) return true;
  // The same keys exactly: one the resource no longer publishes (an endpoint it cannot prove) leaves the copy too.
  const data: Record<string, string | null> = { ...source.data };
  for (const k of Object.keys(current?.data ?? {})) if (!(k in data)) data[k] = null;
  // Before binding, BoundManagedResource says it; after, a change (new keys) is news an app acts on.
  const bound = claim.status?.bindingPhase === 'Bound';
  if (
    (await publishSecretData(
      { client: c.client, cache: c.secrets, signal },
      claim,
      { namespace: claim.metadata.namespace!, name: to.name },
      data,
    )) &&
    bound
  ) {
    c.recorder.normal(claim, Reasons.PropagatedConnectionSecret, `Updated connection Secret ${to.name}`);
  }
  return true;
}
