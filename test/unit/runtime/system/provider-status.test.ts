// The Provider's status writes: a change of its user count alone (a burst of claims moves it with
// every one) is written at most once per 2 s, and the pass comes back when the window ends; any
// other change is written at once. A Provider that is not Ready is judged again soon.
import { describe, expect, it } from '@jest/globals';
import { MemoryEventRecorder } from '../../../../src/kit/controller/events.ts';
import type { Client } from '../../../../src/kit/kube/client.ts';
import { FINALIZER_PROVIDER_IN_USE, ProviderStatusReconciler } from '../../../../src/runtime/system/provider-status.ts';
import type { ProviderObject } from '../../../../src/runtime/providers/provider.ts';
import { type ProviderResolver } from '../../../../src/runtime/providers/resolver.ts';

function setup() {
  let stored: ProviderObject = {
    apiVersion: 'kubernetes.crossplane.io/v1alpha1',
    kind: 'Provider',
    metadata: { name: 'p', namespace: 'ns', generation: 1, finalizers: [FINALIZER_PROVIDER_IN_USE] },
    spec: { credentialsSecretRef: { name: 's' } },
  } as ProviderObject;
  const writes: number[] = [];
  const state = { users: 0, now: 0, reachable: true };
  const client = {
    updateStatus: async (_t: unknown, obj: ProviderObject) => {
      writes.push(obj.status?.users ?? -1);
      stored = structuredClone(obj);
      return obj;
    },
  } as unknown as Client;
  const target = {
    serverVersion: 'v1.35.4',
    informers: { reachable: () => state.reachable, onHealth: () => {} },
    client: { serverVersion: async () => 'v1.35.4' },
  };
  const reconciler = new ProviderStatusReconciler({
    client,
    cache: { get: () => stored },
    resolver: {
      resolve: async () => {
        if (!state.reachable) throw new Error('connection refused');
        return target;
      },
    } as unknown as ProviderResolver,
    users: { cached: () => state.users, live: async () => state.users },
    recorder: new MemoryEventRecorder(),
    pollIntervalMs: 60_000,
    operators: () => [],
    now: () => state.now,
  });
  const run = () => reconciler.reconcile('ns/p', new AbortController().signal);
  return { run, writes, state };
}

describe('ProviderStatusReconciler', () => {
  it('writes a change of the user count alone at most once per 2 s, and comes back when the window ends', async () => {
    const { run, writes, state } = setup();
    await run(); // the first status
    expect(writes).toEqual([0]);
    for (let i = 1; i <= 5; i++) {
      state.users = i;
      state.now += 100;
      const result = await run();
      expect(result).toEqual({ kind: 'requeueAfter', ms: 2_000 - i * 100 });
    }
    expect(writes).toEqual([0]);
    state.now = 2_000;
    await run();
    expect(writes).toEqual([0, 5]);
  });

  it('writes any other change at once', async () => {
    const { run, writes, state } = setup();
    await run();
    state.now += 100;
    state.reachable = false;
    state.users = 3;
    await run();
    expect(writes).toEqual([0, 3]);
  });

  it('judges a Provider that is not Ready again within 10 s, and a Ready one at its poll', async () => {
    const { run, state } = setup();
    expect(await run()).toEqual({ kind: 'requeueAfter', ms: 60_000 });
    state.reachable = false;
    expect(await run()).toEqual({ kind: 'requeueAfter', ms: 10_000 });
    state.reachable = true;
    expect(await run()).toEqual({ kind: 'requeueAfter', ms: 60_000 });
  });
});

describe('ProviderStatusReconciler on a Provider without its finalizer', () => {
  it('adds the finalizer, and writes no status from the cache over what the server holds now', async () => {
    const reservation = { kind: 'ObjectStore', name: 'placed-meanwhile', uid: 'u1' };
    // The cache: no finalizer, no reservation. The server: a scheduler reserved a place since.
    const cached = {
      apiVersion: 'kubernetes.crossplane.io/v1alpha1',
      kind: 'Provider',
      metadata: { name: 'p', namespace: 'ns', generation: 1, resourceVersion: '1' },
      spec: { credentialsSecretRef: { name: 's' } },
    } as ProviderObject;
    const live = { ...cached, metadata: { ...cached.metadata, resourceVersion: '2' }, status: { reservations: [reservation] } };
    const statuses: ProviderObject[] = [];
    const client = {
      jsonPatch: async () => ({ ...live, metadata: { ...live.metadata, resourceVersion: '3', finalizers: [FINALIZER_PROVIDER_IN_USE] } }),
      updateStatus: async (_t: unknown, obj: ProviderObject) => {
        statuses.push(structuredClone(obj));
        return obj;
      },
    } as unknown as Client;
    const target = {
      serverVersion: 'v1.35.4',
      informers: { reachable: () => true, onHealth: () => {} },
      client: { serverVersion: async () => 'v1.35.4' },
    };
    const reconciler = new ProviderStatusReconciler({
      client,
      cache: { get: () => cached },
      resolver: { resolve: async () => target } as unknown as ProviderResolver,
      users: { cached: () => 0, live: async () => 0 },
      recorder: new MemoryEventRecorder(),
      pollIntervalMs: 60_000,
      operators: () => [],
      now: () => 0,
    });
    await reconciler.reconcile('ns/p', new AbortController().signal);
    expect(statuses.filter((s) => !s.status?.reservations?.some((r) => r.uid === 'u1'))).toEqual([]);
  });
});
