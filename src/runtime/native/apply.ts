// A resource's first create in a target, where nothing of it exists yet: its companions, then its
// object, each with a create (which never writes over anything), without a read before each.
import type { KubeClient } from '../../kit/kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Companion, TargetObject } from './kind.ts';
import { forgetNamespace } from './namespaces.ts';
import type { Owner, OwnershipMarks } from '../ownership/marks.ts';

/**
 * Creates the companions in order, then the object (marked `desired`); `made` hears of each companion
 * made. Undefined when one is there after all, or its namespace is not: the caller then reads and
 * checks everything before it writes.
 */
export async function createFresh(
  client: KubeClient,
  marks: OwnershipMarks,
  object: { type: ResourceType; desired: TargetObject; companions: Companion[]; owner: Owner },
  signal: AbortSignal,
  made?: (c: Companion, obj: TargetObject) => void,
): Promise<TargetObject | undefined> {
  const { type, desired, companions, owner } = object;
  try {
    for (const c of companions) made?.(c, await client.create<TargetObject>(c.type, marks.mark(c.type, c.build(), owner), signal));
    return await client.create(type, desired, signal);
  } catch (err) {
    const namespace = desired.metadata.namespace;
    if (isNotFound(err) && namespace) forgetNamespace(client, namespace);
    if (isAlreadyExists(err) || isNotFound(err)) return undefined;
    throw err;
  }
}
