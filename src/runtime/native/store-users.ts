// Which managed resources live in another one's store (NativeKind.endpointFrom: a bucket in a shared
// store), so that the store is deleted only after them, as a PersistentVolumeClaim in use waits for
// its pods. A store deleted first would take what their deletion needs (its root keys, its operator's
// Seaweed): they would wait for good, and their users stay in a store nobody deletes any more.
import type { Controller } from '../../kit/controller/controller.ts';
import type { CacheReader, ReadonlyDeep } from '../../kit/controller/informer.ts';
import { onChange } from '../../kit/controller/handlers.ts';
import { kindName } from '../../kit/controller/names.ts';
import { keyOf } from '../../kit/controller/result.ts';
import type { Client } from '../../kit/kube/client.ts';
import type { ObjectRef, ResourceType } from '../../kit/kube/resources.ts';
import type { ExternalDeletion, ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import type { NativeKind, TargetObject } from './kind.ts';
import type { NativePass } from './pass.ts';

type EndpointFrom = NonNullable<NativeKind<ManagedResource>['endpointFrom']>;
type UserCache = Pick<CacheReader<ManagedResource>, 'list'> & Parameters<typeof onChange<ManagedResource>>[0];

export class StoreUsers {
  private readonly control: Pick<Client, 'list'>;
  private readonly users: { type: ResourceType; cache: UserCache; from: EndpointFrom }[] = [];
  /** Each store kind's managed controller (by kind name), woken when a resource in one of its stores goes. */
  private readonly stores = new Map<string, Controller>();

  /** `control`: the control cluster, asked when the caches show no user (one may be too new for them). */
  constructor(control: Pick<Client, 'list'>) {
    this.control = control;
  }

  /** A kind whose resources live in stores of other kinds: its resources' going wakes their store. */
  addUsers(type: ResourceType, cache: UserCache, from: EndpointFrom): void {
    this.users.push({ type, cache, from });
    const gone = (mr: ReadonlyDeep<ManagedResource>): void => {
      const store = from.of(mr);
      const controller = store && this.stores.get(kindName(store.type));
      if (controller) controller.enqueue(keyOf({ namespace: mr.metadata.namespace ?? '', name: store.name }));
    };
    onChange(cache, gone, { on: ['deleted'] });
  }

  /** A kind of managed resource, with the controller that deletes it. */
  addStore(type: ResourceType, controller: Controller): void {
    this.stores.set(kindName(type), controller);
  }

  /**
   * The resources that live in `store` (a resource of kind `type`) and are not gone, as "Kind
   * namespace/name": from the caches, and, where they show none, from the API server (a resource made
   * a moment ago may not be in them yet, and a store's deletion is never undone). No request for a
   * kind no other kind lives in.
   */
  async of(type: ResourceType, store: ReadonlyDeep<ManagedResource>, signal?: AbortSignal): Promise<string[]> {
    const { namespace, name } = store.metadata;
    const kinds = this.users.filter(({ from }) => from.types.some((t) => kindName(t) === kindName(type)));
    const inStore = (from: EndpointFrom, mr: ReadonlyDeep<ManagedResource>): boolean => {
      const ref = mr.metadata.namespace === namespace ? from.of(mr) : undefined;
      return !!ref && kindName(ref.type) === kindName(type) && ref.name === name;
    };
    const named = (userType: ResourceType, found: readonly ReadonlyDeep<ManagedResource>[]): string[] =>
      found.map((mr) => `${userType.kind} ${keyOf(mr.metadata)}`);
    const cached = kinds.flatMap(({ type: t, cache, from }) =>
      named(
        t,
        cache.list().filter((mr) => inStore(from, mr)),
      ),
    );
    if (cached.length) return cached;
    const live = await Promise.all(
      kinds.map(async ({ type: t, from }) => {
        const { items } = await this.control.list<ManagedResource>(t, {
          ...(namespace ? { namespace } : {}),
          ...(signal ? { signal } : {}),
        });
        return named(
          t,
          items.filter((mr) => inStore(from, mr)),
        );
      }),
    );
    return live.flat();
  }
}

/**
 * Whether a store's deletion waits for what lives in it: only while its object is still in the
 * target (gone, it has nothing left they need), and it says which, and the way out.
 */
export async function storeInUse<MR extends ManagedResource>(
  pass: NativePass<MR>,
  target: ObjectRef,
): Promise<ExternalDeletion['waiting']> {
  if (!pass.opts.usedBy) return undefined;
  const there = await pass.read.get<TargetObject>(target.type, { namespace: target.namespace, name: target.name }, pass.signal);
  // Gone, or going already (asked by an earlier pass): holding it back changes nothing.
  if (!there || there.metadata.deletionTimestamp) return undefined;
  const users = await pass.opts.usedBy(pass.mr, pass.signal);
  if (users.length === 0) return undefined;
  const shown = users.length > 5 ? `${users.slice(0, 5).join(', ')} and ${users.length - 5} more` : users.join(', ');
  return {
    reason: Reasons.StoreInUse,
    message:
      `${shown} ${users.length === 1 ? 'lives' : 'live'} in this store: it is deleted once they are gone, as their deletion needs it. ` +
      'To let them go without it, set their spec.reclaimPolicy to Retain (what they hold in the store goes with it)',
  };
}
