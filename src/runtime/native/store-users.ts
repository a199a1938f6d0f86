// Which managed resources live in another one's store (NativeKind.endpointFrom: a bucket in a shared
// store), so that the store is deleted only after them, as a PersistentVolumeClaim in use waits for
// its pods. A store deleted first would take what their deletion needs (its root keys, its operator's
// Seaweed): they would wait for good, and their users stay in a store nobody deletes any more.
import { ReasonedError } from '../../kit/conditions.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import type { CacheReader, ReadonlyDeep } from '../../kit/controller/informer.ts';
import { onChange } from '../../kit/controller/handlers.ts';
import { kindName } from '../../kit/controller/names.ts';
import { keyOf } from '../../kit/controller/result.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import type { NativeKind } from './kind.ts';

type EndpointFrom = NonNullable<NativeKind<ManagedResource>['endpointFrom']>;
type UserCache = Pick<CacheReader<ManagedResource>, 'list'> & Parameters<typeof onChange<ManagedResource>>[0];

export class StoreUsers {
  private readonly users: { type: ResourceType; cache: UserCache; from: EndpointFrom }[] = [];
  /** Each store kind's managed controller (by kind name), woken when a resource in one of its stores goes. */
  private readonly stores = new Map<string, Controller>();

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

  /** The resources that live in `store` (a resource of kind `type`) and are not gone yet, as "Kind namespace/name". */
  of(type: ResourceType, store: ReadonlyDeep<ManagedResource>): string[] {
    const { namespace, name } = store.metadata;
    return this.users.flatMap(({ type: userType, cache, from }) =>
      from.types.some((t) => kindName(t) === kindName(type))
        ? cache
            .list()
            .filter((mr) => {
              const ref = mr.metadata.namespace === namespace ? from.of(mr) : undefined;
              return ref && kindName(ref.type) === kindName(type) && ref.name === name;
            })
            .map((mr) => `${userType.kind} ${keyOf(mr.metadata)}`)
        : [],
    );
  }
}

/** A store still in use is not deleted: nothing of it is touched, and the error says what it waits for. */
export function refuseWhileUsed(users: string[]): void {
  if (users.length === 0) return;
  const shown = users.length > 5 ? `${users.slice(0, 5).join(', ')} and ${users.length - 5} more` : users.join(', ');
  throw new ReasonedError(
    Reasons.StoreInUse,
    `${shown} ${users.length === 1 ? 'lives' : 'live'} in this store: it is deleted once they are gone (deleting it first would leave their deletion waiting for good)`,
  );
}
