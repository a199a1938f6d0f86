// Which managed resources live in another one's store: found by the kind's endpointFrom, in the
// store's namespace only; their going wakes the store's controller.
import { describe, expect, it } from '@jest/globals';
import type { Controller } from '../../../../src/kit/controller/controller.ts';
import type { Handlers, ReadonlyDeep } from '../../../../src/kit/controller/informer.ts';
import type { Client } from '../../../../src/kit/kube/client.ts';
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { StoreUsers } from '../../../../src/runtime/native/store-users.ts';

const t = (kind: string): ResourceType => ({ apiVersion: 'x.example.com/v1', kind, plural: `${kind.toLowerCase()}s`, namespaced: true });
const [Stores, Others, Buckets] = [t('Store'), t('Other'), t('Bucket')];
const bucket = ({ namespace, name }: Required<ObjectKey>, store: { kind: string; name: string }): ManagedResource => ({
  apiVersion: Buckets.apiVersion,
  kind: Buckets.kind,
  metadata: { namespace, name },
  spec: { store },
});
const from = {
  types: [Stores, Others],
  of: (mr: ReadonlyDeep<ManagedResource>) => {
    const store = (mr.spec as { store?: { kind: string; name: string } }).store;
    return store ? { type: store.kind === 'Store' ? Stores : Others, name: store.name } : undefined;
  },
  keys: [],
};

/** `items` in the cache, `live` on the API server (by default the same); its lists are counted. */
function world(items: ManagedResource[], live: ManagedResource[] = items) {
  const handlers: Handlers<ManagedResource>[] = [];
  const cache = { list: () => items as ReadonlyDeep<ManagedResource>[], on: (h: Handlers<ManagedResource>) => handlers.push(h) };
  const woken: string[] = [];
  const lists: string[] = [];
  const control = {
    list: async (type: ResourceType, { namespace }: { namespace?: string } = {}) => {
      lists.push(`${type.kind} in ${namespace}`);
      return { items: live.filter((mr) => mr.metadata.namespace === namespace), resourceVersion: '1' };
    },
  } as unknown as Pick<Client, 'list'>;
  const users = new StoreUsers(control);
  users.addUsers(Buckets, cache, from);
  users.addStore(Stores, { enqueue: (key: string) => woken.push(key) } as unknown as Controller);
  return { users, woken, handlers, lists };
}
const store = ({ namespace, name }: Required<ObjectKey>) => ({
  apiVersion: Stores.apiVersion,
  kind: 'Store',
  metadata: { namespace, name },
  spec: {},
});

describe('StoreUsers', () => {
  it('lists the resources that name the store, in its namespace only, and of its kind only, from the cache alone', async () => {
    const { users, lists } = world([
      bucket({ namespace: 'ns', name: 'a' }, { kind: 'Store', name: 's' }),
      bucket({ namespace: 'ns', name: 'b' }, { kind: 'Store', name: 's' }),
      bucket({ namespace: 'other', name: 'c' }, { kind: 'Store', name: 's' }),
      bucket({ namespace: 'ns', name: 'd' }, { kind: 'Store', name: 't' }),
      bucket({ namespace: 'ns', name: 'e' }, { kind: 'Other', name: 's' }),
    ]);
    expect(await users.of(Stores, store({ namespace: 'ns', name: 's' }))).toEqual(['Bucket ns/a', 'Bucket ns/b']);
    expect(lists).toEqual([]);
    expect(await users.of(Stores, store({ namespace: 'ns', name: 'u' }))).toEqual([]);
    expect(await users.of(Buckets, store({ namespace: 'ns', name: 's' }))).toEqual([]);
    // Nothing lives in a Bucket: no request for it.
    expect(lists).toEqual(['Bucket in ns']);
  });

  it('asks the API server where the cache shows none: a resource made a moment ago counts', async () => {
    const { users, lists } = world([], [bucket({ namespace: 'ns', name: 'new' }, { kind: 'Store', name: 's' })]);
    expect(await users.of(Stores, store({ namespace: 'ns', name: 's' }))).toEqual(['Bucket ns/new']);
    expect(lists).toEqual(['Bucket in ns']);
  });

  it("wakes the store's controller when a resource in it is deleted, and nothing for another kind's store", () => {
    const { woken, handlers } = world([]);
    for (const h of handlers) {
      h.deleted?.(bucket({ namespace: 'ns', name: 'a' }, { kind: 'Store', name: 's' }));
      h.deleted?.(bucket({ namespace: 'ns', name: 'e' }, { kind: 'Other', name: 's' }));
      h.updated?.(
        bucket({ namespace: 'ns', name: 'a' }, { kind: 'Store', name: 's' }),
        bucket({ namespace: 'ns', name: 'a' }, { kind: 'Store', name: 's' }),
      );
    }
    expect(woken).toEqual(['ns/s']);
  });
});
