// The target namespace a store lives in: created once however many stores share it, and deleted
// with its last store only when it is provably ours and a check of every namespaced type finds it empty.
import type { KubeClient } from '../../kit/kube/client.ts';
import { isAlreadyExists } from '../../kit/kube/errors.ts';
import { anyLiveIn, describeContents, namespaceContents } from '../../kit/kube/discovery.ts';
import { Namespaces, type ResourceType } from '../../kit/kube/resources.ts';
import { Coalescer } from '../../kit/coalesce.ts';
import type { TargetObject } from './kind.ts';
import type { OwnershipMarks, Owner, Vouchers } from '../ownership/marks.ts';

/** Why a namespace of ours was kept: other stores live there (byStores), or it holds anything else (held: found by the check). */
export interface NamespaceKept {
  why: string;
  byStores: boolean;
  held?: boolean;
  /** Nothing of ours to delete there: gone or going already, its marks gone, or another namespace of the name since. */
  notThere?: boolean;
}

const namespaceCreations = new WeakMap<KubeClient, Map<string, Promise<void>>>();
/** Namespaces seen or made by this process: not read again before each create there (see forgetNamespace). */
const namespacesKnown = new WeakMap<KubeClient, Set<string>>();

/** The namespace may be gone (we deleted it, or a create there was refused as NotFound): ensureNamespace reads it again. */
export function forgetNamespace(client: KubeClient, namespace: string): void {
  namespacesKnown.get(client)?.delete(namespace);
}
/**
 * Stores deleted together from one namespace check it together: otherwise each of the last ones
 * lists every namespaced type (16 workers: 16 times 40 lists at the end of a namespace).
 */
const namespaceChecks = new WeakMap<KubeClient, Coalescer<NamespaceKept | undefined>>();

// Stores that share a namespace on one target create it once, not once each, and read it once.
export async function ensureNamespace(
  { client, marks, signal }: { client: KubeClient; marks: OwnershipMarks; signal: AbortSignal },
  namespace: string,
  { owner, vouchers }: { owner: Owner; vouchers: Vouchers },
): Promise<void> {
  let known = namespacesKnown.get(client);
  if (!known) namespacesKnown.set(client, (known = new Set()));
  // Known, it is not read again for a first create (which finds it gone by a NotFound, see
  // apply.ts); a resource that had its object made before reads it, as it may be gone with it.
  if (known.has(namespace) && !vouchers.legacy && !vouchers.recordedUid) return;
  let pending = namespaceCreations.get(client);
  if (!pending) namespaceCreations.set(client, (pending = new Map()));
  let creation = pending.get(namespace);
  if (!creation) {
    creation = (async () => {
      if (await client.get(Namespaces, { name: namespace }, signal)) return;
      await client
        .create(
          Namespaces,
          marks.stamped(Namespaces, marks.mark(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, owner)),
          signal,
        )
        .catch((err: unknown) => {
          if (!isAlreadyExists(err)) throw err;
        });
    })().finally(() => pending.delete(namespace));
    pending.set(namespace, creation);
  }
  await creation;
  known.add(namespace);
  // Upgrade: a namespace made for this resource before marks were signed gets them signed, so it
  // can be deleted with its last store (unsigned marks never prove anything to a deletion).
  if (vouchers.legacy) {
    const ns = await client.get<TargetObject>(Namespaces, { name: namespace }, signal);
    if (ns && marks.unsigned(ns) && marks.relation(Namespaces, ns, owner, vouchers) === 'ours') {
      const { labels, annotations } = marks.mark(Namespaces, ns, owner).metadata;
      // Conditional on the copy judged: a namespace made again by someone else meanwhile is not signed.
      const { uid, resourceVersion } = ns.metadata;
      await client.mergePatch(Namespaces, { name: namespace }, { metadata: { uid, resourceVersion, labels, annotations } }, signal);
    }
  }
}

/**
 * Deletes a target namespace that this control plane created, but only when a check of every
 * namespaced type finds nothing else in it. Returns why it was kept, if it was (and is ours).
 */
export async function deleteNamespaceIfUnused(
  client: KubeClient,
  marks: OwnershipMarks,
  /** By name, or the very namespace a sweep judged (with its uid): one made again since is not that one. */
  which: string | { name: string; uid?: string },
  stores: ResourceType,
  signal?: AbortSignal,
): Promise<NamespaceKept | undefined> {
  const [namespace, judged] = typeof which === 'string' ? [which, undefined] : [which.name, which.uid];
  // Both at once (one round trip). Cheap first: other stores there keep it, and the full check (a
  // list per type) is not needed.
  const [ns, othersLive] = await Promise.all([
    client.get<TargetObject>(Namespaces, { name: namespace }, signal),
    anyLiveIn(client, stores, namespace, signal),
  ]);
  if (!ns || ns.metadata.deletionTimestamp) forgetNamespace(client, namespace);
  if (!ns || ns.metadata.deletionTimestamp || !marks.claimedOwner(ns) || (judged && ns.metadata.uid !== judged))
    return { why: `namespace ${namespace} is not there to delete`, byStores: false, notThere: true };
  // Marks anyone could have copied never make a namespace ours to delete.
  if (!marks.provenOwner(Namespaces, ns)) {
    return {
      why: `kept namespace ${namespace} in the target cluster: its ownership marks carry no valid signature (written before marks were signed, or not by provider-rook)`,
      byStores: false,
    };
  }
  if (othersLive) return { why: `kept namespace ${namespace} in the target cluster: other ${stores.kind}s live there`, byStores: true };
  const contents = await namespaceContents(client, namespace, signal);
  if (contents.found.length || contents.unchecked.length)
    return {
      why: `kept namespace ${namespace} in the target cluster: ${describeContents(contents)}`,
      byStores: false,
      held: contents.found.length > 0,
    };
  forgetNamespace(client, namespace);
  await client.delete(Namespaces, { name: namespace }, { uid: ns.metadata.uid, signal });
  return undefined;
}

/** deleteNamespaceIfUnused, shared by the deletions of one namespace's stores that run at the same time. */
export async function deleteNamespaceIfUnusedCoalesced(
  client: KubeClient,
  marks: OwnershipMarks,
  namespace: string,
  stores: ResourceType,
  signal?: AbortSignal,
): Promise<NamespaceKept | undefined> {
  let checks = namespaceChecks.get(client);
  if (!checks) namespaceChecks.set(client, (checks = new Coalescer()));
  return checks.run(`${stores.apiVersion}/${stores.plural} ${namespace}`, () =>
    deleteNamespaceIfUnused(client, marks, namespace, stores, signal),
  );
}
