// Writes a managed resource's connection details into a Secret in its own namespace, controlled by
// the resource. Writes only when the data differs; writes only a Secret it controls (its uid).
import { type Cache } from '../../kit/controller/informer.ts';
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Client } from '../../kit/kube/client.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import type { KubeObjectLike, Selection } from '../../kit/kube/client.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import { Secrets } from '../../kit/kube/resources.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import { isAlreadyExists, isConflict } from '../../kit/kube/errors.ts';
import { Reasons } from '../reasons.ts';
import { CONNECTION_SECRET_TYPE, ownerReference } from '../../kit/meta.ts';
import type { ConnectionDetails } from './types.ts';

/** Whoever controls the Secret: a managed resource, or a claim for its copy. */
type Owner = { apiVersion?: string; kind?: string; metadata: { name: string; uid?: string } };

export interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { uid: string; controller?: boolean; kind?: string; name?: string; apiVersion?: string }[];
  };
  type?: string;
  data?: Record<string, string>;
}

export function encode(details: ConnectionDetails): Record<string, string> {
  return Object.fromEntries(Object.entries(details).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
}

export function controllerUid(obj: {
  readonly metadata: { readonly ownerReferences?: readonly { readonly uid: string; readonly controller?: boolean }[] };
}): string | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller)?.uid;
}

/** The shared cache of connection Secrets. Only those: caching every Secret of the cluster would cost memory and trust. */
export const connectionSecrets = (manager: {
  informer<T extends KubeObjectLike>(type: typeof Secrets, selection: Selection): Informer<T>;
}): Informer<SecretObject> => manager.informer<SecretObject>(Secrets, { fieldSelector: `type=${CONNECTION_SECRET_TYPE}` });

/** The cache of connection Secrets: one that holds the Secret saves the read; a miss in a synced one is an answer. */
export type ConnectionSecrets = Pick<Cache<SecretObject>, 'get'> & { readonly hasSynced?: boolean };

/**
 * Where connection Secrets are written: the control cluster's client, and the cache of connection
 * Secrets that saves its reads, when there is one.
 */
export interface SecretsAccess {
  client: Client;
  cache?: ConnectionSecrets;
  signal?: AbortSignal;
}

/** Creates or updates the Secret at `key` for `owner`; returns true when it wrote. */
export function publishSecret(at: SecretsAccess, owner: Owner, key: Required<ObjectKey>, details: ConnectionDetails): Promise<boolean> {
  return publishSecretData(at, owner, key, encode(details));
}

/** As publishSecret, with data already base64 (e.g. copied from another Secret); a null removes that key. */
export async function publishSecretData(
  { client, cache, signal }: SecretsAccess,
  owner: Owner,
  { namespace, name }: Required<ObjectKey>,
  data: Record<string, string | null>,
): Promise<boolean> {
  const create = (): Promise<unknown> =>
    client.create(
      Secrets,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace, ownerReferences: [ownerReference(owner)] },
        type: CONNECTION_SECRET_TYPE,
        data: Object.fromEntries(Object.entries(data).filter(([, v]) => v !== null)),
      },
      signal,
    );
  let existing = cache?.hasSynced ? cache.get({ namespace, name }) : undefined;
  // Missed by a synced cache, it is most likely not there: a create (which never overwrites) instead
  // of a read first; only when someone has it after all is it read.
  if (!existing && cache?.hasSynced) {
    try {
      await create();
      return true;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
  existing ??= await client.get<SecretObject>(Secrets, { namespace, name }, signal);
  if (!existing) {
    await create();
    return true;
  }
  // Only a Secret this very owner controls (by uid) is ours: whatever its type or history, any other
  // Secret is someone's (another app's, one restored or written by hand) and is never overwritten.
  if (!owner.metadata.uid || controllerUid(existing) !== owner.metadata.uid) {
    throw new ReasonedError(
      Reasons.ConnectionSecretConflict,
      `connection Secret ${namespace}/${name} exists and is not controlled by ${owner.kind} ${owner.metadata.name}; refusing to overwrite it. ` +
        'Name another Secret, or delete this one if nothing else uses it',
    );
  }
  const current = existing.data ?? {};
  if (Object.entries(data).every(([k, v]) => (v === null ? current[k] === undefined : current[k] === v))) return false;
  await patchData(client, existing, data, signal);
  return true;
}

/** A merge patch of a Secret's data (null removes a key), conditional on the copy just checked: a Secret replaced in between is not written. */
function patchData(
  client: Client,
  existing: ReadonlyDeep<SecretObject>,
  data: Record<string, string | null>,
  signal?: AbortSignal,
): Promise<unknown> {
  const { name, namespace, uid, resourceVersion } = existing.metadata;
  return client.mergePatch(Secrets, { namespace, name }, { metadata: { uid, resourceVersion }, data }, signal);
}

/**
 * Removes `keys` from the Secret `owner` publishes, if it controls it and it holds any of them: what
 * can no longer be vouched for (an endpoint provider-rook cannot prove) must not lead an app there.
 */
export async function withholdKeys(
  { client, cache, signal }: SecretsAccess,
  owner: Owner,
  at: Required<ObjectKey>,
  keys: string[],
): Promise<void> {
  const existing =
    (cache?.hasSynced ? cache.get(at) : undefined) ??
    (cache?.hasSynced ? undefined : await client.get<SecretObject>(Secrets, { namespace: at.namespace, name: at.name }, signal));
  if (!existing || !owner.metadata.uid || controllerUid(existing) !== owner.metadata.uid) return;
  const held = keys.filter((k) => existing.data?.[k] !== undefined);
  if (held.length) await patchData(client, existing, Object.fromEntries(held.map((k) => [k, null])), signal);
}

/**
 * Deletes the Secret if (and only if) `owner` controls it. A synced cache's copy proves that as well
 * as a read, since the delete is conditional on its uid and resourceVersion (a changed one is read
 * again); a Secret the cache does not hold is not read for: one of ours the cache has not seen yet
 * names its owner, and the garbage collector takes it with the owner.
 */
export async function unpublishSecret(
  { client, cache, signal }: SecretsAccess,
  owner: Owner,
  { namespace, name }: Required<ObjectKey>,
): Promise<void> {
  const cached = cache?.hasSynced ? cache.get({ namespace, name }) : undefined;
  if (cache?.hasSynced && !cached) return;
  if (cached && controllerUid(cached) !== owner.metadata.uid) return;
  if (cached) {
    const { uid, resourceVersion } = cached.metadata;
    try {
      await client.delete(Secrets, { namespace, name }, { uid, resourceVersion, signal });
      return;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  const existing = await client.get<SecretObject>(Secrets, { namespace, name }, signal);
  if (existing && controllerUid(existing) === owner.metadata.uid)
    await client.delete(Secrets, { namespace, name }, { uid: existing.metadata.uid, signal });
}
