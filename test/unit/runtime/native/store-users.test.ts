// Which managed resources live in another one's store: found by the kind's endpointFrom, in the
// store's namespace only; their going wakes the store's controller.
import { describe, expect, it } from '@jest/globals';
import type { Controller } from '../../../../src/kit/controller/controller.ts';
import type { Handlers, ReadonlyDeep } from '../../../../src/kit/controller/informer.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { refuseWhileUsed, StoreUsers } from '../../../../src/runtime/native/store-users.ts';

const t = (kind: string): ResourceType => ({ apiVersion: 'x.example.com/v1', kind, plural: `${kind.toLowerCase()}s`, namespaced: true });
const [Stores, Others, Buckets] = [t('Store'), t('Other'), t('Bucket')];
const bucket = (namespace: string, name: string, store: { kind: string; name: string }): ManagedResource => ({
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

function world(items: ManagedResource[]) {
  const handlers: Handlers<ManagedResource>[] = [];
  const cache = { list: () => items as ReadonlyDeep<ManagedResource>[], on: (h: Handlers<ManagedResource>) => handlers.push(h) };
  const woken: string[] = [];
  const users = new StoreUsers();
  users.addUsers(Buckets, cache, from);
  users.addStore(Stores, { enqueue: (key: string) => woken.push(key) } as unknown as Controller);
  return { users, woken, handlers };
}
const store = (namespace: string, name: string) => ({
  apiVersion: Stores.apiVersion,
  kind: 'Store',
  metadata: { namespace, name },
  spec: {},
});

describe('StoreUsers', () => {
  it('lists the resources that name the store, in its namespace only, and of its kind only', () => {
    const { users } = world([
      bucket('ns', 'a', { kind: 'Store', name: 's' }),
      bucket('ns', 'b', { kind: 'Store', name: 's' }),
      bucket('other', 'c', { kind: 'Store', name: 's' }),
      bucket('ns', 'd', { kind: 'Store', name: 't' }),
      bucket('ns', 'e', { kind: 'Other', name: 's' }),
    ]);
    expect(users.of(Stores, store('ns', 's'))).toEqual(['Bucket ns/a', 'Bucket ns/b']);
    expect(users.of(Stores, store('ns', 'u'))).toEqual([]);
    expect(users.of(Buckets, store('ns', 's'))).toEqual([]);
  });

  it("wakes the store's controller when a resource in it is deleted, and nothing for another kind's store", () => {
    const { woken, handlers } = world([]);
    for (const h of handlers) {
      h.deleted?.(bucket('ns', 'a', { kind: 'Store', name: 's' }));
      h.deleted?.(bucket('ns', 'e', { kind: 'Other', name: 's' }));
      h.updated?.(bucket('ns', 'a', { kind: 'Store', name: 's' }), bucket('ns', 'a', { kind: 'Store', name: 's' }));
    }
    expect(woken).toEqual(['ns/s']);
  });

  it('refuses a deletion while anything lives in the store, naming at most five', () => {
    expect(() => refuseWhileUsed([])).not.toThrow();
    const many = Array.from({ length: 7 }, (_, i) => `Bucket ns/b${i}`);
    expect(() => refuseWhileUsed(many)).toThrow(/^Bucket ns\/b0, .*Bucket ns\/b4 and 2 more live in this store/);
  });
});
