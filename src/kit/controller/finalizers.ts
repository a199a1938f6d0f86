// Finalizers go in and out by JSON patch with a test operation (kube-rs's finalizer.rs), never by
// writing the whole object: what another writer changed since our read (its own finalizer, a label)
// is neither overwritten nor a reason to fail, and a list that changed under us fails the test.
import type { Client, KubeObjectLike } from '../kube/client.ts';
import { KubeError } from '../kube/errors.ts';
import type { ResourceType } from '../kube/resources.ts';

type Finalizable = KubeObjectLike & { metadata: { finalizers?: string[] } };

/**
 * Adds `finalizer` to the object as read (`obj`): the list must still be what it was then, so two
 * writers never both append (the API server does not deduplicate). Returns the object as stored.
 */
export async function addFinalizer<T extends Finalizable>(
  client: Client,
  type: ResourceType,
  obj: T,
  finalizer: string,
  signal?: AbortSignal,
): Promise<T> {
  const ops = addFinalizerOps(obj, finalizer);
  return ops.length ? patchTested(client, type, obj, ops, signal) : obj;
}

/** The operations that add `finalizer` to the object as read (none when it has it), for a patch that may carry more. */
export function addFinalizerOps(obj: Finalizable, finalizer: string): object[] {
  const current = obj.metadata.finalizers;
  if (current?.includes(finalizer)) return [];
  // `null` tests that the list is absent; an object's first finalizer makes the list.
  return [
    { op: 'test', path: '/metadata/finalizers', value: current ?? null },
    { op: 'add', path: '/metadata/finalizers', value: [...(current ?? []), finalizer] },
  ];
}

/**
 * Removes `finalizer` at the index it had in the object as read, after testing it is still there:
 * finalizers others add or remove after it leave it where it was.
 */
export async function removeFinalizer<T extends Finalizable>(
  client: Client,
  type: ResourceType,
  obj: T,
  finalizer: string,
  signal?: AbortSignal,
): Promise<T> {
  const i = obj.metadata.finalizers?.indexOf(finalizer) ?? -1;
  if (i < 0) return obj;
  return patchTested(
    client,
    type,
    obj,
    [
      { op: 'test', path: `/metadata/finalizers/${i}`, value: finalizer },
      { op: 'remove', path: `/metadata/finalizers/${i}` },
    ],
    signal,
  );
}

/**
 * A JSON patch whose tests guard what it changes: a failed test is a conflict. The object must
 * still be the one read: a copy of one since deleted and made anew under its name (a lagging
 * cache's) would otherwise pass tests of fields the new one happens to share.
 */
export async function patchTested<T extends Finalizable>(
  client: Client,
  type: ResourceType,
  obj: T,
  ops: object[],
  signal?: AbortSignal,
): Promise<T> {
  const { uid } = obj.metadata;
  const guarded = uid ? [{ op: 'test', path: '/metadata/uid', value: uid }, ...ops] : ops;
  try {
    return await client.jsonPatch<T>(type, { namespace: obj.metadata.namespace, name: obj.metadata.name }, guarded, signal);
  } catch (err) {
    // A failed test is the API server's 422; callers treat it as what it is, a conflict (requeue quietly).
    if (isTestFailure(err)) throw new KubeError(409, 'Conflict', `${type.kind} ${obj.metadata.name} changed since it was read`);
    throw err;
  }
}

/**
 * A merge patch of the object as read, and of no other made since under its name (a lagging cache's
 * copy of one deleted and made anew): the server refuses to change the uid, which is a conflict.
 */
export async function mergePatchSame<T extends KubeObjectLike>(
  client: Client,
  type: ResourceType,
  obj: KubeObjectLike,
  patch: { metadata?: object } & Record<string, unknown>,
  signal?: AbortSignal,
): Promise<T> {
  const { namespace, name, uid } = obj.metadata;
  try {
    return await client.mergePatch<T>(type, { namespace, name }, { ...patch, metadata: { ...patch.metadata, uid } }, signal);
  } catch (err) {
    if (err instanceof KubeError && err.code === 422 && /metadata\.uid: Invalid value: .*field is immutable/.test(err.message))
      throw new KubeError(409, 'Conflict', `${type.kind} ${name} was made anew since it was read`);
    throw err;
  }
}

/**
 * The answer to a JSON patch that does not apply (a failed test, an index gone): the API server's
 * 422 with its generic message (the "testing value ... failed" detail is only in the Status's
 * causes), unlike a validation failure's 422, which names the object and field.
 */
export function isTestFailure(err: unknown): boolean {
  return (
    err instanceof KubeError && err.code === 422 && /testing value|rejected our request due to an error in our request/i.test(err.message)
  );
}
